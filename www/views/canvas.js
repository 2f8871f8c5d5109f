// Draws an RGBA image from the worker ({ width, height, data: Uint8ClampedArray }).
export function drawImage(canvas, image) {
  canvas.width = image.width;
  canvas.height = image.height;
  canvas.getContext('2d').putImageData(new ImageData(image.data, image.width, image.height), 0, 0);
}
