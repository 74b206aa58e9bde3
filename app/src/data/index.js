// Data import: users' own CSV, NumPy and image files to data sets the engine trains on. Pure modules,
// no DOM (browserdecode.js apart, which needs the browser's image decoder); nothing runs on import.

export { CSV_DEFAULTS, parseCsv, parseCsvStream } from "./csv.js";
export {
  canonicalBytes,
  contentHash,
  dataVersion,
  engineFiles,
  makeDataset,
  permutation,
  splitDataset,
  splitIndices,
  subset,
} from "./dataset.js";
export { DataError } from "./errors.js";
export { IMAGE_DEFAULTS, imagesFromFiles, imagesFromZip } from "./images.js";
export { datasetFromNpyPair, datasetFromNpz, NPY_DEFAULTS, readNpy } from "./npy.js";
export { preview } from "./preview.js";
