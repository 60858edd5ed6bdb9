// Selectors of the navigation store.
import { useNavigationStore, type Route } from './store';

export const selectRoute = (state: { route: Route }): Route => state.route;

export const useRoute = (): Route => useNavigationStore(selectRoute);

export const useNavigate = () => useNavigationStore((state) => state.navigate);
