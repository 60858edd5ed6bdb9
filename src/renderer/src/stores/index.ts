// Starts what the stores follow (events, transport state) and loads the first data; returns the stop.
// Called once before the first render, so the first calls overlap React's start-up.
import { useAgentStore } from './agent/store';
import { useDomainsStore } from './domains/store';
import { useLogsStore } from './logs/store';
import { usePlatformStore } from './platform/store';
import { useProjectsStore } from './projects/store';
import { useToastsStore } from './toasts/store';
import { useTrafficStore } from './traffic/store';
import { useTunnelsStore } from './tunnels/store';

export function startStores(): () => void {
  const platform = usePlatformStore.getState();
  const projects = useProjectsStore.getState();
  // The list first: on a fresh Engine, asking for the status would fetch the list a second time.
  // Once the list has answered, the status reflects that contact.
  const catchUp = () => void projects.loadList().then(() => platform.load());
  const logs = useLogsStore.getState();
  const tunnels = useTunnelsStore.getState();
  const traffic = useTrafficStore.getState();
  const stops = [
    projects.subscribe(),
    logs.subscribe(),
    tunnels.subscribe(),
    traffic.subscribe(),
    useAgentStore.getState().subscribe(),
    useToastsStore.getState().subscribe(),
    platform.subscribe(() => {
      catchUp();
      // The app forgot this page's follows with its event socket.
      logs.refollowAll();
      // Tunnel changes and exchanges may have happened while the socket was down.
      void tunnels.load();
      if (useTrafficStore.getState().status !== 'idle') void traffic.reload();
      // Domains may have been added or verified elsewhere meanwhile.
      if (useDomainsStore.getState().domains !== null) void useDomainsStore.getState().load();
    }),
    // Another platform saved in Settings: what the screens show belongs to the old one.
    usePlatformStore.subscribe((state, before) => {
      const now = state.status?.platformUrl;
      const was = before.status?.platformUrl;
      if (now === undefined || was === undefined || now === was) return;
      useProjectsStore.getState().forget();
      void useProjectsStore.getState().loadList();
      if (useDomainsStore.getState().domains !== null) {
        useDomainsStore.setState({ domains: null, created: null, verifications: {}, linking: {} });
        void useDomainsStore.getState().load();
      }
    }),
  ];
  catchUp();
  return () => {
    for (const stop of stops) stop();
  };
}
