// Imported first by main.tsx: chooses the Bridge (so the token leaves the URL before anything reads
// it) and sends the first calls, which then travel while React itself is still being evaluated.
import { startStores } from './stores';
import { usePlatformStore } from './stores/platform/store';

// Without a token nothing can answer: the app only explains how to open it.
if (usePlatformStore.getState().transport !== 'no-token') startStores();
