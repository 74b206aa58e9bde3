// The two DOM helpers every panel uses.

export const byId = (id) => document.getElementById(id);

// A new element with its text (when given) and attributes.
export function element(tag, text, attributes = {}) {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  return node;
}
