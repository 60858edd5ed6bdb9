// Starts what the stores follow (events, transport state) and loads the first data; returns the stop.
// Called once before the first render, so the first calls overlap React's start-up.
import { usePlatformStore } from './platform/store';
import { useProjectsStore } from './projects/store';

export function startStores(): () => void {
  const platform = usePlatformStore.getState();
  const projects = useProjectsStore.getState();
  // The list first: on a fresh Engine, asking for the status would fetch the list a second time.
  // Once the list has answered, the status reflects that contact.
  const catchUp = () => void projects.loadList().then(() => platform.load());
  const stops = [projects.subscribe(), platform.subscribe(catchUp)];
  catchUp();
  return () => {
    for (const stop of stops) stop();
  };
}
