// Mounts the model views into #views: receptive fields, hidden-unit histograms,
// reconstructions, Gibbs samples, the dream and the supervised results. Each view asks the
// worker for images and draws them; nothing here computes on the main thread.
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

export function mountViews(container, app) {
  linkStylesheet();
  return {
    filters: mountFilters(container, app),
    histograms: mountHistograms(container, app),
    reconstructions: mountReconstructions(container, app),
    samples: mountGibbs(container, app),
    dream: mountDream(container, app),
    results: mountResults(container, app),
  };
}
