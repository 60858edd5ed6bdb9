// One client of the Bridge: a desktop window, or a browser page with its event socket. What it
// follows through the Bridge (`logs.follow`) is counted, so that all of it can be released when the
// client goes (a reload, a closed window, a dropped socket): no log stream outlives the page that
// asked for it. Both transports (Electron IPC, the inspector's HTTP) keep one session per client.
import type { Bridge, BridgeInput, BridgeOperation, BridgeOutput, LogFollow } from '../shared/bridge.js';

export class BridgeSession {
  /** How many times this client follows each project. */
  private readonly follows = new Map<string, number>();

  constructor(private readonly bridge: Bridge) {}

  /** Calls the Bridge for this client, counting what it follows and unfollows. */
  async invoke<K extends BridgeOperation>(operation: K, input: BridgeInput<K>): Promise<BridgeOutput<K>> {
    const value = await this.bridge.invoke(operation, input);
    if (operation === 'logs.follow') {
      const id = (value as LogFollow).projectId;
      this.follows.set(id, (this.follows.get(id) ?? 0) + 1);
    } else if (operation === 'logs.unfollow') {
      const id = (input as { id: string }).id;
      const count = this.follows.get(id) ?? 0;
      if (count > 1) this.follows.set(id, count - 1);
      else this.follows.delete(id);
    }
    return value;
  }

  /** The client went away: unfollows everything it still followed. */
  async release(): Promise<void> {
    const follows = [...this.follows];
    this.follows.clear();
    for (const [id, count] of follows) {
      for (let i = 0; i < count; i++)
        await this.bridge.invoke('logs.unfollow', { id }).catch(() => undefined);
    }
  }
}
