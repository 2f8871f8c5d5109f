// Fits the first screen to the window: a column whose panels are all hidden (an embed's
// `*_hide` flags) collapses so the others take its room, and the two live pictures get the
// largest size at which they, their captions and the headline charts still fit the height.
const $ = (id) => document.getElementById(id);

// Room under the pictures' canvases: caption, status and options (about 120 px), and the
// headline charts when they show (about 190 px more).
const BELOW_CANVAS = 130;
const HEADLINE = 195;
const SMALLEST = 140;

export function mountLayout() {
  const main = $('layout');
  // Whether an element shows anything; a `display: contents` wrapper shows what its children do.
  const shown = (element) => {
    const display = getComputedStyle(element).display;
    if (display === 'none') return false;
    return display !== 'contents' || [...element.children].some(shown);
  };

  function collapseEmptyColumns() {
    for (const column of main.querySelectorAll('.column')) {
      column.toggleAttribute('data-empty', ![...column.children].some(shown));
    }
    const more = $('more');
    const heading = $('more-heading');
    if (more && heading) heading.hidden = ![...more.children].some((c) => c !== heading && shown(c));
  }

  function fitPictures() {
    const pictures = $('pictures');
    if (!pictures || !shown(pictures)) return;
    const top = pictures.getBoundingClientRect().top + scrollY;
    const headline = $('headline-panel');
    const reserve = BELOW_CANVAS + 40 + (headline && shown(headline) ? HEADLINE : 0);
    const size = Math.max(SMALLEST, Math.floor(innerHeight - top - reserve));
    document.documentElement.style.setProperty('--picture-size', `${size}px`);
  }

  function update() {
    collapseEmptyColumns();
    fitPictures();
  }
  addEventListener('resize', update);
  update();
  return { update };
}
