// The browser's image decoder for images.js (`decode`): createImageBitmap, then an OffscreenCanvas's pixels,
// in a page or a worker. Browser only: Node has neither, so tests inject a decoder of their own.

export async function decodeInBrowser(bytes, name) {
  const type = /\.png$/i.test(name) ? "image/png" : "image/jpeg";
  // Unpremultiplied and unconverted, so the values are the file's own.
  const options = { premultiplyAlpha: "none", colorSpaceConversion: "none" };
  const bitmap = await createImageBitmap(new Blob([bytes], { type }), options);
  try {
    const canvas = new OffscreenCanvas(bitmap.width, bitmap.height);
    const context = canvas.getContext("2d", { willReadFrequently: true });
    context.drawImage(bitmap, 0, 0);
    const { data } = context.getImageData(0, 0, bitmap.width, bitmap.height);
    return { width: bitmap.width, height: bitmap.height, rgba: data };
  } finally {
    bitmap.close();
  }
}
