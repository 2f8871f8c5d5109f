// Reconstruction error per epoch, drawn with uPlot.
import uPlot from '../vendor/uPlot.esm.js';

export class ErrorChart {
  constructor(element) {
    this.element = element;
    this.epochs = [];
    this.errors = [];
    this.plot = new uPlot(this.options(), [this.epochs, this.errors], element);
    new ResizeObserver(() => this.plot.setSize(this.size())).observe(element);
  }

  size() {
    return { width: Math.max(200, this.element.clientWidth), height: 220 };
  }

  options() {
    return {
      ...this.size(),
      scales: { x: { time: false } },
      axes: [{ label: 'epoch' }, { label: 'mean squared error', size: 60 }],
      series: [{ label: 'epoch' }, { label: 'reconstruction error', stroke: '#2f6fdd', width: 2, points: { show: true } }],
    };
  }

  reset() {
    this.epochs.length = 0;
    this.errors.length = 0;
    this.plot.setData([this.epochs, this.errors]);
  }

  add(epoch, error) {
    this.epochs.push(epoch);
    this.errors.push(error);
    this.plot.setData([this.epochs, this.errors]);
  }
}
