// What the platform's request log keeps of a URL: never a credential passed in its query.
import { describe, expect, it } from 'vitest';
import { logRequest, redactUrl } from '../../../../src/server/auth/authenticate.js';

const KEY = `wk_${'Z'.repeat(32)}`;

describe('redactUrl', () => {
  it.each([
    [`/api/v1/ws/traffic/x?token=${KEY}`, '/api/v1/ws/traffic/x?token=[redacted]'],
    [
      `/api/v1/tunnels/connect?subdomain=a&token=${KEY}&b=1`,
      '/api/v1/tunnels/connect?subdomain=a&token=[redacted]&b=1',
    ],
    [`/x?TOKEN=${KEY}#frag`, '/x?TOKEN=[redacted]#frag'],
    [`/x?api_key=${KEY}&access_token=eyJ.x.y`, '/x?api_key=[redacted]&access_token=[redacted]'],
    ['/api/v1/projects?limit=5', '/api/v1/projects?limit=5'],
    ['/api/v1/tokens/x?notatoken=1', '/api/v1/tokens/x?notatoken=1'],
  ])('logs %s as %s', (url, logged) => {
    expect(redactUrl(url)).toBe(logged);
  });
});

describe('logRequest', () => {
  it("keeps Fastify's fields and redacts the URL", () => {
    const line = logRequest({
      method: 'GET',
      url: `/api/v1/ws/traffic/x?token=${KEY}`,
      host: '127.0.0.1:8787',
      ip: '127.0.0.1',
      headers: {},
      socket: { remotePort: 5555 },
    });
    expect(line).toEqual({
      method: 'GET',
      url: '/api/v1/ws/traffic/x?token=[redacted]',
      version: undefined,
      host: '127.0.0.1:8787',
      remoteAddress: '127.0.0.1',
      remotePort: 5555,
    });
    expect(JSON.stringify(line)).not.toContain(KEY);
  });
});
