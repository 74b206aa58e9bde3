// The large files of a build that a user may never ask for: the pretrained model and the texts to
// fine-tune it on. Start-up does not fetch them (integrity.js checks every other file; sw.js keeps every
// other file for offline use); each is checked against build.json when a user's choice fetches it.

const LAZY = ["models/", "texts/"];

export const isLazy = (file) => LAZY.some((prefix) => file.startsWith(prefix));
