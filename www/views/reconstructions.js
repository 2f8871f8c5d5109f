// Reconstructions: data cases beside what the whole stack gives back after one pass up to the
// top layer and down again. Refreshed after each epoch and whenever the model changes.
import { clearImage, coalesce, drawImage, el, errorText, field, inlineError, panel, readNumber } from './canvas.js';

const MAX_CASES = 100;

export function mountReconstructions(container, app) {
  app.hash.register('recon_count', 20);
  const section = panel(container, {
    hideKey: 'reconstructions', heading: 'Reconstructions',
    help: 'Each data case (left) beside its reconstruction (right): up through every layer and back down to the pixels.',
    caption: 'Pairs: a digit from the data (left) and the model\'s reconstruction of it (right), computed up through every layer and back down. Good reconstructions mean the features keep what matters.',
  });
  const count = el('input', { id: 'recon-count', type: 'number', min: 1, max: MAX_CASES, step: 1, value: app.hash.get('recon_count') });
  const countError = inlineError('recon-count-error');
  const canvas = el('canvas', { id: 'reconstructions-canvas', className: 'view-image', width: 1, height: 1, role: 'img', 'aria-label': 'Data cases, each beside its reconstruction' });
  const note = el('p', { id: 'reconstructions-note', className: 'view-note' }, 'Train a model to see its reconstructions.');
  section.append(el('div', { className: 'view-controls' },
    field('Cases', count, { title: `How many data cases to reconstruct (1–${MAX_CASES}).`, hideKey: 'recon_count' }), countError), canvas, note, section.caption);

  const refresh = coalesce(async () => {
    const wanted = readNumber(count);
    if (wanted === null || !Number.isInteger(wanted) || wanted < 1 || wanted > MAX_CASES) {
      countError.show(`Cases: enter a whole number from 1 to ${MAX_CASES}.`);
      return;
    }
    countError.show('');
    try {
      drawImage(canvas, await app.rpc('view_reconstructions', { count: wanted, columns: Math.min(wanted, 10) }));
      note.textContent = 'Each pair: the data case, then its reconstruction through the whole stack.';
    } catch (error) {
      const noModel = /no model/i.test(errorText(error));
      if (noModel) clearImage(canvas);
      note.textContent = noModel ? 'Train a model to see its reconstructions.' : `Could not reconstruct: ${errorText(error)}`;
    }
  });

  count.addEventListener('change', () => {
    if (readNumber(count) !== null) app.hash.set('recon_count', Number(count.value));
    refresh();
  });
  app.on('epoch', refresh);
  app.on('model', refresh);
  return { refresh };
}
