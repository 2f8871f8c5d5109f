// After supervised training: test accuracy, the confusion matrix as a grid whose cells show
// their example digits when chosen (mouse or keyboard), and the misclassified digits.
import { drawImage, el, errorText, panel } from './canvas.js';

const MAX_EXAMPLES = 40;
const MAX_MISCLASSIFIED = 60;

export function mountResults(container, app) {
  const section = panel(container, {
    hideKey: 'results', heading: 'Supervised results',
    help: 'How the supervised layers classify the held-out cases (the training cases when nothing is held out).',
    caption: 'How the supervised layers classify the held-out digits. Rows are the true class, columns the predicted one; choose a cell to see its digits.',
  });
  const accuracy = el('p', { id: 'results-accuracy', className: 'view-note' }, 'Train with supervised layers to see the test accuracy.');
  const matrix = el('table', { id: 'confusion-matrix', className: 'confusion', role: 'grid', 'aria-label': 'Confusion matrix: rows are true classes, columns predicted; choose a cell to see its cases' });
  const examplesCaption = el('p', { id: 'confusion-examples-caption', className: 'view-note', 'aria-live': 'polite' });
  const examples = el('ul', { id: 'confusion-examples', className: 'tiles', 'aria-label': 'Cases of the chosen cell' });
  const misclassifiedCaption = el('h3', { id: 'misclassified-heading' }, 'Misclassified');
  const misclassified = el('ul', { id: 'misclassified', className: 'tiles', 'aria-labelledby': 'misclassified-heading' });
  const details = el('div', { id: 'results-details', hidden: true },
    el('div', { className: 'confusion-wrap', dataset: { hideKey: 'confusion' } }, matrix, examplesCaption, examples),
    el('div', { dataset: { hideKey: 'misclassified' } }, misclassifiedCaption, misclassified));
  section.append(accuracy, section.caption, details);

  let classNames = [];
  const label = (k) => classNames[k] ?? String(k);

  function tile(image, caption, title) {
    const canvas = el('canvas', { className: 'view-image', width: 1, height: 1, role: 'img', 'aria-label': title });
    drawImage(canvas, image);
    return el('li', { title }, el('figure', {}, canvas, el('figcaption', {}, caption)));
  }

  async function showCell(truth, predicted, count) {
    matrix.querySelectorAll('[aria-selected="true"]').forEach((cell) => cell.setAttribute('aria-selected', 'false'));
    matrix.querySelector(`[data-truth="${truth}"][data-predicted="${predicted}"]`)?.setAttribute('aria-selected', 'true');
    examples.replaceChildren();
    examples.dataset.truth = truth;
    examples.dataset.predicted = predicted;
    if (!count) {
      examplesCaption.textContent = `No ${label(truth)} was predicted as ${label(predicted)}.`;
      examples.dataset.tiles = '0';
      return;
    }
    try {
      const tiles = await app.rpc('results_confusion_examples', { truth, predicted, max: MAX_EXAMPLES });
      examples.replaceChildren(...tiles.map(({ case: index, image }) => tile(image, `#${index}`, `case ${index}: true ${label(truth)}, predicted ${label(predicted)}`)));
      examples.dataset.tiles = String(tiles.length);
      const shown = tiles.length < count ? `; the first ${tiles.length} shown` : '';
      examplesCaption.textContent = `${count} case${count === 1 ? '' : 's'} of true ${label(truth)} predicted ${label(predicted)}${shown}.`;
    } catch (error) {
      examplesCaption.textContent = `Could not fetch the cases: ${errorText(error)}`;
    }
  }

  // One focusable cell at a time (roving tabindex); arrows move, Enter or Space chooses.
  function drawMatrix(counts) {
    const n = counts.length;
    const head = el('tr', {}, el('th', { scope: 'col', title: 'rows: true class; columns: predicted class' }, 'true \\ predicted'),
      ...counts.map((_, p) => el('th', { scope: 'col' }, label(p))));
    const max = Math.max(1, ...counts.flat());
    const rows = counts.map((row, t) => el('tr', {}, el('th', { scope: 'row' }, label(t)), ...row.map((value, p) => {
      const shade = value / max;
      const cell = el('td', {
        role: 'gridcell', tabIndex: t === 0 && p === 0 ? 0 : -1, 'aria-selected': 'false',
        title: `true ${label(t)}, predicted ${label(p)}: ${value} case${value === 1 ? '' : 's'} (Enter shows them)`,
        className: t === p ? 'diagonal' : value ? 'confused' : '',
        dataset: { truth: t, predicted: p, count: value },
      }, String(value));
      cell.style.setProperty('--shade', shade.toFixed(3));
      return cell;
    })));
    matrix.replaceChildren(el('thead', {}, head), el('tbody', {}, ...rows));
    matrix.dataset.total = String(counts.flat().reduce((a, b) => a + b, 0));
    matrix.dataset.classes = String(n);
  }

  matrix.addEventListener('click', (event) => {
    const cell = event.target.closest('td[data-truth]');
    if (cell) {
      focusCell(cell);
      showCell(Number(cell.dataset.truth), Number(cell.dataset.predicted), Number(cell.dataset.count));
    }
  });
  matrix.addEventListener('keydown', (event) => {
    const cell = event.target.closest('td[data-truth]');
    if (!cell) return;
    const n = Number(matrix.dataset.classes);
    let t = Number(cell.dataset.truth);
    let p = Number(cell.dataset.predicted);
    const moves = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1], Home: [0, -n], End: [0, n] };
    if (event.key === 'Enter' || event.key === ' ') {
      event.preventDefault();
      showCell(t, p, Number(cell.dataset.count));
      return;
    }
    if (!moves[event.key]) return;
    event.preventDefault();
    t = Math.min(n - 1, Math.max(0, t + moves[event.key][0]));
    p = Math.min(n - 1, Math.max(0, p + moves[event.key][1]));
    focusCell(matrix.querySelector(`td[data-truth="${t}"][data-predicted="${p}"]`));
  });
  function focusCell(cell) {
    matrix.querySelectorAll('td[tabindex="0"]').forEach((other) => { other.tabIndex = -1; });
    cell.tabIndex = 0;
    cell.focus();
  }

  async function refresh() {
    let result;
    try {
      result = await app.rpc('results_classification');
    } catch {
      // No supervised layers (a plain RBM stack, or no model): nothing to show yet.
      details.hidden = true;
      accuracy.textContent = 'Train with supervised layers to see the test accuracy.';
      delete accuracy.dataset.error;
      return;
    }
    details.hidden = false;
    classNames = result.class_names ?? [];
    const set = result.set === 'held_out' ? 'held-out' : 'training';
    accuracy.textContent = `Test accuracy on ${result.n_cases} ${set} cases: ${(100 * (1 - result.error)).toFixed(2)}% (error ${(100 * result.error).toFixed(2)}%).`;
    accuracy.dataset.error = String(result.error);
    accuracy.dataset.cases = String(result.n_cases);
    app.emit('accuracy', { accuracy: 1 - result.error, cases: result.n_cases, set: result.set });
    drawMatrix(result.counts);
    examples.replaceChildren();
    examplesCaption.textContent = 'Choose a cell to see its cases.';
    try {
      const wrong = await app.rpc('results_misclassified', { max: MAX_MISCLASSIFIED });
      misclassified.replaceChildren(...wrong.map(({ case: index, image, truth, predicted }) =>
        tile(image, `${label(truth)} → ${label(predicted)}`, `case ${index}: true ${label(truth)}, predicted ${label(predicted)}`)));
      misclassified.dataset.tiles = String(wrong.length);
      misclassifiedCaption.textContent = wrong.length ? `Misclassified (true → predicted; ${wrong.length} shown)` : 'Misclassified: none';
    } catch (error) {
      misclassifiedCaption.textContent = `Misclassified: could not fetch them (${errorText(error)})`;
    }
  }

  app.on('supervised_done', refresh);
  app.on('model', refresh);
  return { refresh };
}
