// Receptive fields: each first-layer hidden unit's weights drawn over the image, in DEEP's grey
// mode (zero mid-grey, white positive, black negative) or colour mode (red positive, blue
// negative, black zero), refreshed after each first-layer epoch and whenever the model changes.
import { clearImage, coalesce, drawImage, el, errorText, field, inlineError, options, panel, readNumber } from './canvas.js';

const MAX_FILTERS = 1024;

export function mountFilters(container, app) {
  app.hash.register('filter_mode', 'grey');
  app.hash.register('filter_count', 100);
  const section = panel(container, {
    hideKey: 'filters', heading: 'What the first layer detects',
    help: 'Receptive fields: each tile is one first-layer hidden unit, its weight to every pixel drawn over the image.',
    caption: 'Each tile is one first-layer hidden unit: its weight to every pixel. Noise at first, then strokes and pieces of digits.',
  });
  const mode = el('select', { id: 'filter-mode' },
    el('option', { value: 'grey', title: "DEEP's grey mode: zero is mid-grey, positive weights lighter, negative darker" }, 'Grey'),
    el('option', { value: 'colour', title: 'Colour mode: positive weights red, negative blue, brightness the size; zero is black' }, 'Colour'));
  mode.value = app.hash.get('filter_mode') === 'colour' ? 'colour' : 'grey';
  const count = el('input', { id: 'filter-count', type: 'number', min: 1, max: MAX_FILTERS, step: 1, value: app.hash.get('filter_count') });
  const countError = inlineError('filter-count-error');
  const canvas = el('canvas', { id: 'filters-canvas', className: 'view-image', width: 1, height: 1, role: 'img', 'aria-label': 'Receptive fields of the first-layer hidden units' });
  const note = el('p', { id: 'filters-note', className: 'view-note' }, 'White pixels excite the unit, black ones inhibit it, mid-grey is zero. Train a model to see them.');
  section.append(canvas, section.caption, el('div', { className: 'view-status' }, note,
    options(el('div', { className: 'view-controls' },
      field('Mode', mode, { title: "Grey: DEEP's grey mode (zero mid-grey). Colour: positive weights red, negative blue, zero black.", hideKey: 'filter_mode' }),
      field('Filters', count, { title: `How many hidden units to draw (1–${MAX_FILTERS}); a model with fewer units shows them all.`, hideKey: 'filter_count' }),
      countError))));

  const refresh = coalesce(async () => {
    const wanted = readNumber(count);
    if (wanted === null || wanted < 1 || wanted > MAX_FILTERS || !Number.isInteger(wanted)) {
      countError.show(`Filters: enter a whole number from 1 to ${MAX_FILTERS}.`);
      return;
    }
    countError.show('');
    try {
      // A square-ish grid of the filters there are (the first layer may have fewer units).
      const units = app.model?.layers?.[0]?.[1] ?? firstLayerSize(app) ?? wanted;
      const shown = Math.max(1, Math.min(wanted, units));
      const image = await app.rpc('view_filters', { count: shown, columns: Math.ceil(Math.sqrt(shown)), mode: mode.value });
      drawImage(canvas, image);
      canvas.dataset.mode = mode.value;
      note.textContent = mode.value === 'grey' ? 'White pixels excite the unit, black ones inhibit it, mid-grey is zero.' : 'Red pixels excite the unit, blue ones inhibit it, black is zero; each tile to its own scale.';
    } catch (error) {
      const noModel = /no model/i.test(errorText(error));
      if (noModel) clearImage(canvas);
      note.textContent = noModel ? 'White pixels excite the unit, black ones inhibit it, mid-grey is zero. Train a model to see them.' : `Could not draw the filters: ${errorText(error)}`;
    }
  });

  mode.addEventListener('change', () => {
    app.hash.set('filter_mode', mode.value);
    refresh();
  });
  count.addEventListener('change', () => {
    if (readNumber(count) !== null) app.hash.set('filter_count', Number(count.value));
    refresh();
  });
  app.on('epoch', ({ layer }) => {
    if (layer === 0) refresh();
  });
  app.on('model', refresh);
  return { refresh };
}

function firstLayerSize(app) {
  try {
    return app.settings()?.stack?.layers?.[0];
  } catch {
    return undefined;
  }
}
