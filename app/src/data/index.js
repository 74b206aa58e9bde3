// Data import: users' own CSV, NumPy and image files to data sets the engine trains on. Pure modules,
// no DOM (browserdecode.js apart, which needs the browser's image decoder); nothing runs on import.

export { parseCsv, parseCsvStream, CSV_DEFAULTS } from "./csv.js";
export { readNpy, datasetFromNpz, datasetFromNpyPair, NPY_DEFAULTS } from "./npy.js";
export { imagesFromZip, imagesFromFiles, IMAGE_DEFAULTS } from "./images.js";
export {
  makeDataset,
  subset,
  permutation,
  splitIndices,
  splitDataset,
  canonicalBytes,
  contentHash,
  engineFiles,
  dataVersion,
} from "./dataset.js";
export { preview } from "./preview.js";
export { DataError } from "./errors.js";
