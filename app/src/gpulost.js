// A lost WebGPU device as a named error (no DOM): what GPUDeviceLostInfo said (its reason and message)
// and which device it was. The executor throws it for every call after the loss, the probe store for an
// answer it could not confirm on a live device; the engine's worker hands it to the page by name, where
// the run panel offers to reopen the GPU and resume.

export const GPU_LOST = "GpuLostError";

// GPUDeviceLostInfo as plain data: {reason, message}; reason is "destroyed" or "unknown".
export function lossOf(info) {
  const text = (value, otherwise) => (typeof value === "string" && value ? value : otherwise);
  return { reason: text(info?.reason, "unknown"), message: text(info?.message, "no message") };
}

export class GpuLostError extends Error {
  // `info`: GPUDeviceLostInfo (or lossOf's data); `device`: the device's name; `during`: what it stopped.
  constructor(info, device = "", during = "") {
    const { reason, message } = lossOf(info);
    const when = during ? ` during ${during}` : "";
    super(
      `the GPU was lost (${reason}: ${message})${when}: ${device || "the device"} does nothing more until it is reopened`,
    );
    this.name = GPU_LOST;
    this.reason = reason;
    this.lostMessage = message;
    this.device = device;
  }
}

// Whether `error` (here, or as the page receives it through rpc.js, which keeps its name) is a loss.
export function isGpuLost(error) {
  return error?.name === GPU_LOST;
}
