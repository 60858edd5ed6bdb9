import { describe, expect, it } from 'vitest';
import {
  BodyTap,
  CaptureRing,
  Exchange,
  ResponseHeadReader,
  headerList,
} from '../../../src/core/capture/capture.js';

function exchange(bodyBytes: number) {
  const e = new Exchange({
    tunnelId: 'tun_test',
    method: 'POST',
    path: '/',
    url: 'http://t.tunnel.localhost/',
    httpVersion: 'HTTP/1.1',
    requestHeaders: [],
    remoteAddr: null,
  });
  e.requestBody.push(Buffer.alloc(bodyBytes, 1));
  e.response(200, []);
  return e.finish();
}

describe('BodyTap', () => {
  it('keeps the first bytes up to its limit, counts them all, and says it truncated', () => {
    const tap = new BodyTap(5);
    tap.push(Buffer.from('abc'));
    tap.push(Buffer.from('defgh'));
    expect(tap.body.toString()).toBe('abcde');
    expect(tap.size).toBe(8);
    expect(tap.truncated).toBe(true);
  });
});

describe('CaptureRing', () => {
  it('keeps the last `capacity` exchanges, newest first', () => {
    const ring = new CaptureRing(3);
    const all = Array.from({ length: 5 }, () => exchange(1));
    all.forEach((e) => ring.add(e));
    expect(ring.list().map((r) => r.id)).toEqual(
      all
        .slice(2)
        .reverse()
        .map((e) => e.request.id),
    );
    expect(ring.get(all[0]!.request.id)).toBeUndefined();
    expect(ring.total).toBe(5);
  });

  it('drops the oldest bodies past its byte budget, flagging them truncated, and keeps the metadata', () => {
    const ring = new CaptureRing(10, 250);
    const all = Array.from({ length: 4 }, () => exchange(100));
    all.forEach((e) => ring.add(e));
    expect(ring.size).toBe(4);
    const kept = all.map((e) => ring.get(e.request.id)!);
    expect(kept.map((e) => e.requestBody.length)).toEqual([0, 0, 100, 100]);
    expect(kept.map((e) => e.requestBodyTruncated)).toEqual([true, true, false, false]);
    expect(kept[0]!.request.request_size).toBe(100);
  });
});

describe('headerList', () => {
  it('keeps order, case and repeated names', () => {
    expect(headerList(['Set-Cookie', 'a=1', 'set-cookie', 'b=2'])).toEqual([
      { name: 'Set-Cookie', value: 'a=1' },
      { name: 'set-cookie', value: 'b=2' },
    ]);
  });
});

describe('ResponseHeadReader', () => {
  it('reads a 101 head split across chunks, and then stops looking', () => {
    const reader = new ResponseHeadReader();
    expect(reader.push(Buffer.from('HTTP/1.1 101 Switching Protocols\r\nUpgrade: web'))).toBeNull();
    const head = reader.push(Buffer.from('socket\r\nConnection: Upgrade\r\n\r\n\x81\x05hello'));
    expect(head).toEqual({
      status: 101,
      headers: [
        { name: 'Upgrade', value: 'websocket' },
        { name: 'Connection', value: 'Upgrade' },
      ],
    });
    expect(reader.done).toBe(true);
    expect(reader.push(Buffer.from('HTTP/1.1 200 OK\r\n\r\n'))).toBeNull();
  });

  it('gives up on bytes that are not an HTTP response', () => {
    const reader = new ResponseHeadReader();
    expect(reader.push(Buffer.from('garbage\r\n\r\n'))).toBeNull();
    expect(reader.done).toBe(true);
  });
});
