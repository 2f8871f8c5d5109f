// The dream: one generative chain from a random top-layer state, propagated down to the pixels
// and drawn large as it wanders, with its own step counter and a filmstrip of recent frames.
import { clearImage, drawImage, el, errorText, panel, settingsSeed } from './canvas.js';
import { liveControls } from './gibbs.js';

const FILM_FRAMES = 8;
// A frame joins the filmstrip every this many posted frames, so the strip spans a while.
const FILM_EVERY_FRAMES = 4;

export function mountDream(container, app) {
  const section = panel(container, {
    hideKey: 'dream', heading: 'Dream',
    help: 'One chain at the top layer, started from a random state; each frame is its top state propagated down to the pixels.',
    caption: 'The dream is one Gibbs chain started from random noise at the top layer, never from data: each frame is the top layer\'s state carried down to the pixels. The strip keeps recent frames, oldest first.',
  });
  const canvas = el('canvas', { id: 'dream-canvas', className: 'view-image dream-image', width: 1, height: 1, role: 'img', 'aria-label': 'The dreaming chain, as seen at the pixels' });
  const film = el('ol', { id: 'dream-filmstrip', className: 'filmstrip', 'aria-label': 'Recent dream frames, oldest first' });
  const note = el('p', { id: 'dream-note', className: 'view-note' }, 'The dream starts once a model exists.');
  let started = false;
  let restarts = 0;
  let framesSeen = 0;

  const live = liveControls(app, {
    prefix: 'dream', hashPrefix: 'dream', defaults: { every: 5, speed: 20 },
    onRestart: () => startDream(),
    onConfigure: (value) => app.rpc('dream_configure', value).catch((error) => live.showError(errorText(error))),
  });
  section.append(live.row, el('div', { className: 'dream-stage' }, canvas, film), section.caption, live.counter, note);

  async function startDream() {
    const timing = live.settings();
    if (!timing) return;
    const seed = settingsSeed(app) + 1000 + restarts;
    restarts += 1;
    try {
      await app.rpc('dream_start', { seed, ...timing });
      started = true;
      framesSeen = 0;
      film.replaceChildren();
      note.textContent = 'Dreaming from a random top state.';
    } catch (error) {
      note.textContent = /no model/i.test(errorText(error)) ? 'The dream starts once a model exists.' : `Could not start the dream: ${errorText(error)}`;
    }
  }

  function addFilmFrame(image, steps) {
    const frame = el('canvas', { className: 'view-image', width: 1, height: 1, role: 'img', 'aria-label': `Dream after ${steps} steps` });
    drawImage(frame, image);
    film.append(el('li', { title: `after ${steps} steps` }, frame, el('span', {}, String(steps))));
    while (film.children.length > FILM_FRAMES) film.firstElementChild.remove();
  }

  const startOnce = () => {
    if (!started) startDream();
  };
  app.on('epoch', startOnce);
  // No model (Reset, or data of another size): the dream and its filmstrip go with it.
  app.on('model', ({ summary }) => {
    if (summary) return startOnce();
    started = false;
    clearImage(canvas);
    film.replaceChildren();
    framesSeen = 0;
    live.steps.textContent = '0';
    note.textContent = 'The dream starts once a model exists.';
  });
  // A new engine has no dream: the next model starts them again.
  app.on('worker_restarted', () => {
    started = false;
  });
  app.on('dream', ({ image, steps, error }) => {
    if (error) {
      if (/no dream/i.test(error)) started = false;
      note.textContent = /no model|no dream/i.test(error) ? 'Waiting for the model…' : `The dream stopped: ${error}`;
      return;
    }
    drawImage(canvas, image);
    live.steps.textContent = String(steps);
    canvas.dataset.steps = String(steps);
    if (framesSeen % FILM_EVERY_FRAMES === 0) addFilmFrame(image, steps);
    framesSeen += 1;
  });
  return { restart: startDream };
}
