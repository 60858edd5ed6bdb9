// Where requests for a project go changes as it runs: a deploy switches to a new version (on new
// ports), a crashed service comes back (maybe on another port), a Swarm task moves, a project stops.
// The Node edge asks the runtime at each request and needs no telling; a front proxy with its own
// routing table (the HAProxy front) subscribes here, and may hold the stop of a replaced version until
// it sends it nothing.
import type { Endpoint } from './drivers/swarm.js';

export interface RouteListener {
  /** The targets of `projectId` changed (runtime.target and runtime.servers answer differently now). */
  changed(projectId: string): void;
  /**
   * A replaced version answering at `servers` is about to stop, once its requests through the edge
   * are done: resolves when the listener no longer sends it any either.
   */
  released?(servers: Endpoint[]): Promise<void>;
}

export class RouteEvents {
  private readonly listeners = new Set<RouteListener>();

  /** Adds a listener; returns what removes it. */
  subscribe(listener: RouteListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  changed(projectId: string): void {
    for (const listener of this.listeners) {
      try {
        listener.changed(projectId);
      } catch {
        // a listener's failure is its own: the runtime carries on
      }
    }
  }

  /** Waits for every listener to let go of `servers` (each bounds its own wait; a failure counts as done). */
  async released(servers: Endpoint[]): Promise<void> {
    if (servers.length === 0) return;
    await Promise.allSettled([...this.listeners].map(async (listener) => listener.released?.(servers)));
  }
}
