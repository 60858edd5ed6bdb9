// Bodies in the detail pane: kinds, pretty JSON and XML, forms and query strings, hex dumps, images.
import { describe, expect, it } from 'vitest';
import {
  base64ToBytes,
  bodyKind,
  bodyViews,
  bytesToBase64,
  contentTypeOf,
  decodeUtf8,
  hexDump,
  imageDataUrl,
  jsonTokens,
  looksBinary,
  pathOnly,
  prettyJson,
  prettyXml,
} from '../../../src/renderer/src/lib/body-format.js';
import { parseForm, queryParams } from '../../../src/shared/form.js';

const bytes = (text: string) => new TextEncoder().encode(text);

describe('base64 and UTF-8', () => {
  it('round-trips bytes through base64, empty and null included', () => {
    const all = Uint8Array.from({ length: 256 }, (_, i) => i);
    expect(base64ToBytes(bytesToBase64(all))).toEqual(all);
    expect(base64ToBytes(null)).toEqual(new Uint8Array(0));
    expect(base64ToBytes('')).toEqual(new Uint8Array(0));
  });

  it('encodes a body larger than one chunk', () => {
    const big = new Uint8Array(100_000).map((_, i) => i % 251);
    expect(base64ToBytes(bytesToBase64(big))).toEqual(big);
    expect(bytesToBase64(big)).toBe(Buffer.from(big).toString('base64'));
  });

  it('says when bytes are not UTF-8', () => {
    expect(decodeUtf8(bytes('héllo'))).toEqual({ text: 'héllo', valid: true });
    expect(decodeUtf8(Uint8Array.of(0x68, 0xff))).toEqual({ text: 'h\ufffd', valid: false });
  });
});

describe('contentTypeOf and bodyKind', () => {
  it('reads the type and charset of the first Content-Type, in any case', () => {
    expect(contentTypeOf([{ name: 'content-TYPE', value: 'Application/JSON; Charset="utf-8"' }])).toEqual({
      mime: 'application/json',
      charset: 'utf-8',
    });
    expect(contentTypeOf([])).toEqual({ mime: '', charset: null });
  });

  it('goes by the Content-Type first', () => {
    expect(bodyKind('application/json', bytes('not json'))).toBe('json');
    expect(bodyKind('application/problem+json', bytes('{}'))).toBe('json');
    expect(bodyKind('application/atom+xml', bytes('<feed/>'))).toBe('xml');
    expect(bodyKind('text/xml', bytes('<a/>'))).toBe('xml');
    expect(bodyKind('application/x-www-form-urlencoded', bytes('a=1'))).toBe('form');
    expect(bodyKind('image/png', Uint8Array.of(0x89, 0x50))).toBe('image');
    expect(bodyKind('text/html', bytes('<p>hi</p>'))).toBe('text');
  });

  it('sniffs JSON and XML in untyped text, and binary data in anything not typed as text', () => {
    expect(bodyKind('', bytes(' {"a": 1}'))).toBe('json');
    expect(bodyKind('text/plain', bytes('{"a": 1'))).toBe('text');
    expect(bodyKind('', bytes('<?xml version="1.0"?><a/>'))).toBe('xml');
    expect(bodyKind('application/octet-stream', Uint8Array.of(0, 1, 2, 3))).toBe('binary');
    expect(bodyKind('', new Uint8Array(0))).toBe('empty');
  });

  it('offers the views that make sense for each kind, the default first', () => {
    expect(bodyViews('json')).toEqual(['pretty', 'raw', 'hex']);
    expect(bodyViews('form')).toEqual(['form', 'raw', 'hex']);
    expect(bodyViews('image')).toEqual(['image', 'hex']);
    expect(bodyViews('binary')).toEqual(['hex', 'raw']);
    expect(bodyViews('empty')).toEqual([]);
  });

  it('tells binary from text, a character cut at the sample edge included', () => {
    expect(looksBinary(bytes('plain text\nwith lines\ttabs'))).toBe(false);
    expect(looksBinary(Uint8Array.of(0x50, 0x4b, 0x03, 0x04, 0x00))).toBe(true);
    expect(looksBinary(Uint8Array.of(0xff, 0xfe, 0x41))).toBe(true);
    // 8,191 ASCII bytes then "é" (2 bytes): the sample of 8,192 ends inside it.
    const cut = new Uint8Array([...bytes('a'.repeat(8191)), ...bytes('é'), ...bytes('tail')]);
    expect(looksBinary(cut)).toBe(false);
  });
});

describe('prettyJson', () => {
  it('indents objects and arrays by two spaces', () => {
    expect(prettyJson('{"a":1,"b":[true,null,{"c":"x"}],"d":{}, "e": []}')).toBe(
      [
        '{',
        '  "a": 1,',
        '  "b": [',
        '    true,',
        '    null,',
        '    {',
        '      "c": "x"',
        '    }',
        '  ],',
        '  "d": {},',
        '  "e": []',
        '}',
      ].join('\n'),
    );
  });

  it('keeps number literals, key order, duplicate keys and string escapes exactly', () => {
    const text = '{"id":12345678901234567890,"z":1,"a":1e-7,"z":2,"s":"q\\"{,}:[]"}';
    const pretty = prettyJson(text);
    expect(pretty).toContain('"id": 12345678901234567890');
    expect(pretty).toContain('"s": "q\\"{,}:[]"');
    expect(pretty?.indexOf('"z": 1')).toBeLessThan(pretty!.indexOf('"a": 1e-7'));
    expect(pretty).toContain('"z": 2');
    // Same value once parsed.
    expect(JSON.parse(pretty!)).toEqual(JSON.parse(text));
  });

  it('re-indents JSON that was already pretty, and leaves scalars alone', () => {
    expect(prettyJson('{\n    "a" :   [ 1 ,2 ]\n}')).toBe('{\n  "a": [\n    1,\n    2\n  ]\n}');
    expect(prettyJson('"text"')).toBe('"text"');
    expect(prettyJson('42')).toBe('42');
  });

  it('answers null for what is not JSON', () => {
    expect(prettyJson('{"a":')).toBeNull();
    expect(prettyJson('hello')).toBeNull();
  });

  it('cuts pretty JSON into coloured tokens that join back to the text', () => {
    const pretty = prettyJson('{"name":"Ada","age":36,"admin":false,"tags":null}')!;
    const tokens = jsonTokens(pretty);
    expect(tokens.map((t) => t.text).join('')).toBe(pretty);
    expect(tokens.filter((t) => t.kind === 'key').map((t) => t.text)).toEqual([
      '"name"',
      '"age"',
      '"admin"',
      '"tags"',
    ]);
    expect(tokens.filter((t) => t.kind === 'string').map((t) => t.text)).toEqual(['"Ada"']);
    expect(tokens.filter((t) => t.kind === 'number').map((t) => t.text)).toEqual(['36']);
    expect(tokens.filter((t) => t.kind === 'literal').map((t) => t.text)).toEqual(['false', 'null']);
  });
});

describe('prettyXml', () => {
  it('puts one tag per line, indented, keeping text-only elements on one line', () => {
    expect(
      prettyXml(
        '<?xml version="1.0"?><order id="7"><item sku="a>b">Tea</item><note/><empty></empty></order>',
      ),
    ).toBe(
      [
        '<?xml version="1.0"?>',
        '<order id="7">',
        '  <item sku="a>b">Tea</item>',
        '  <note/>',
        '  <empty></empty>',
        '</order>',
      ].join('\n'),
    );
  });

  it('keeps comments, CDATA and the doctype, and drops whitespace between tags', () => {
    expect(
      prettyXml('<!DOCTYPE note>\n<note>\n  <!-- a > b -->\n  <body><![CDATA[<not a tag>]]></body>\n</note>'),
    ).toBe(
      [
        '<!DOCTYPE note>',
        '<note>',
        '  <!-- a > b -->',
        '  <body>',
        '    <![CDATA[<not a tag>]]>',
        '  </body>',
        '</note>',
      ].join('\n'),
    );
  });

  it('indents mixed content and namespaced names', () => {
    expect(prettyXml('<s:Envelope><s:Body>text<b>bold</b></s:Body></s:Envelope>')).toBe(
      ['<s:Envelope>', '  <s:Body>', '    text', '    <b>bold</b>', '  </s:Body>', '</s:Envelope>'].join(
        '\n',
      ),
    );
  });

  it('answers null for what is not markup or never closes a tag', () => {
    expect(prettyXml('hello <a/>')).toBeNull();
    expect(prettyXml('<a href="x>')).toBeNull();
    expect(prettyXml('<a><!-- open')).toBeNull();
  });
});

describe('forms and query strings', () => {
  it('parses urlencoded pairs in order, decoding + and escapes', () => {
    expect(parseForm('name=Ada+Lovelace&lang=en&lang=fr&note=50%25+off&flag&=blank&x=')).toEqual([
      { name: 'name', value: 'Ada Lovelace' },
      { name: 'lang', value: 'en' },
      { name: 'lang', value: 'fr' },
      { name: 'note', value: '50% off' },
      { name: 'flag', value: '' },
      { name: '', value: 'blank' },
      { name: 'x', value: '' },
    ]);
  });

  it('keeps a malformed escape as sent instead of failing', () => {
    expect(parseForm('q=100%&r=%E2%82%AC')).toEqual([
      { name: 'q', value: '100%' },
      { name: 'r', value: '€' },
    ]);
  });

  it('reads the query of a path, without its fragment', () => {
    expect(queryParams('/search?q=wharf+docs&page=2#results')).toEqual([
      { name: 'q', value: 'wharf docs' },
      { name: 'page', value: '2' },
    ]);
    expect(queryParams('/plain')).toEqual([]);
    expect(pathOnly('/search?q=1')).toBe('/search');
    expect(pathOnly('/plain')).toBe('/plain');
  });
});

describe('hexDump', () => {
  it('writes offset, two groups of eight bytes and the printable ASCII', () => {
    expect(hexDump(bytes('Hello, world!\n\u0000\u007f'))).toBe(
      '00000000  48 65 6c 6c 6f 2c 20 77  6f 72 6c 64 21 0a 00 7f  |Hello, world!...|',
    );
  });

  it('pads a short last row so the ASCII column lines up', () => {
    const dump = hexDump(bytes('0123456789abcdefXYZ')).split('\n');
    expect(dump).toHaveLength(2);
    expect(dump[1]).toBe(`00000010  58 59 5a ${' '.repeat(40)} |XYZ|`);
    expect(dump[1]!.indexOf('|')).toBe(dump[0]!.indexOf('|'));
  });

  it('stops at the limit', () => {
    expect(hexDump(new Uint8Array(1000), 32).split('\n')).toHaveLength(2);
    expect(hexDump(new Uint8Array(0))).toBe('');
  });
});

describe('imageDataUrl', () => {
  it('makes a data URL of an image type only', () => {
    expect(imageDataUrl('image/png', 'iVBORw0KGgo=')).toBe('data:image/png;base64,iVBORw0KGgo=');
    expect(imageDataUrl('image/svg+xml', 'PHN2Zy8+')).toBe('data:image/svg+xml;base64,PHN2Zy8+');
    expect(imageDataUrl('text/html', 'PGI+')).toBeNull();
    expect(imageDataUrl('image/png;x', 'AA==')).toBeNull();
    expect(imageDataUrl('image/png', null)).toBeNull();
  });
});
