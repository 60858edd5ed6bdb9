// Starts what the stores follow (events, transport state) and loads the first data; returns the stop.
// Called once before the first render, so the first calls overlap React's start-up.
import { useLogsStore } from './logs/store';
import { usePlatformStore } from './platform/store';
import { useProjectsStore } from './projects/store';
import { useToastsStore } from './toasts/store';

export function startStores(): () => void {
  const platform = usePlatformStore.getState();
  const projects = useProjectsStore.getState();
  // The list first: on a fresh Engine, asking for the status would fetch the list a second time.
  // Once the list has answered, the status reflects that contact.
  const catchUp = () => void projects.loadList().then(() => platform.load());
  const logs = useLogsStore.getState();
  const stops = [
    projects.subscribe(),
    logs.subscribe(),
    useToastsStore.getState().subscribe(),
    platform.subscribe(() => {
      catchUp();
      // The app forgot this page's follows with its event socket.
      logs.refollowAll();
    }),
  ];
  catchUp();
  return () => {
    for (const stop of stops) stop();
  };
}
