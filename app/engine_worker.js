// Entry module of the engine's Web Worker: the only code here that runs on import.

import { startEngine } from "./src/enginehost.js";

startEngine(self);
