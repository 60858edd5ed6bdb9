// HTTP's token (RFC 9110 §5.6.2), the one home for it: what a method and a header name are made of. The
// byte path's parser refuses a header line whose name is not one; the Bridge and the replay editor
// refuse a method or a header name that is not one.

export const HTTP_TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
