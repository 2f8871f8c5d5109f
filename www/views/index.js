// Mounts the model views: the two live pictures of the first screen (Gibbs samples and
// first-layer receptive fields) into `slots.pictures`, and the rest (hidden-unit histograms,
// reconstructions, the dream, the supervised results) below the fold into `slots.more`. Each
// view asks the worker for images and draws them; nothing here computes on the main thread.
import { mountDream } from './dream.js';
import { mountFilters } from './filters.js';
import { mountGibbs } from './gibbs.js';
import { mountHistograms } from './histograms.js';
import { mountReconstructions } from './reconstructions.js';
import { mountResults } from './results.js';

// The views' stylesheet travels with them, so the page needs only the container.
function linkStylesheet() {
  const href = new URL('../views.css', import.meta.url).href;
  if ([...document.styleSheets].some((sheet) => sheet.href === href) || document.querySelector(`link[href="${href}"]`)) return;
  document.head.append(Object.assign(document.createElement('link'), { rel: 'stylesheet', href }));
}

export function mountViews({ pictures, more }, app) {
  linkStylesheet();
  return {
    samples: mountGibbs(pictures, app),
    filters: mountFilters(pictures, app),
    results: mountResults(more, app),
    dream: mountDream(more, app),
    reconstructions: mountReconstructions(more, app),
    histograms: mountHistograms(more, app),
  };
}
