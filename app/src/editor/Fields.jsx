// The side panel's form fields: one per parameter of an op (its control from the catalog's kind, its doc,
// default and range, and the issues the check put on it) and one per field of the program. A text field
// keeps what is typed until Enter or leaving it; then the value goes to the editor, which records it.

import { useId } from "react";
import { fieldKind, isRequired, parseField, rangeText, unsetText, valueText } from "./params.js";

// A text field whose text is the value's until edited; re-created when the value changes elsewhere
// (undo, a remedy), so it never shows a stale text.
function TextField({ id, kind, value, placeholder, required, invalid, describedBy, onCommit }) {
  const text = valueText(value);
  const commit = (event) => onCommit(parseField(kind, event.target.value)); // the editor skips no-ops
  const onKeyDown = (event) => {
    if (event.key === "Enter") {
      event.preventDefault();
      commit(event);
    } else if (event.key === "Escape") {
      event.target.value = text;
    }
  };
  return (
    <input
      key={text}
      id={id}
      type="text"
      defaultValue={text}
      placeholder={placeholder}
      spellCheck="false"
      autoComplete="off"
      aria-invalid={invalid}
      aria-required={required}
      aria-describedby={describedBy}
      onBlur={commit}
      onKeyDown={onKeyDown}
    />
  );
}

function Control({ id, param, value, required, invalid, describedBy, onCommit }) {
  const kind = fieldKind(param);
  const shown = value === undefined ? param.default : value;
  const common = { id, "aria-invalid": invalid, "aria-describedby": describedBy, "aria-required": required };
  if (kind === "checkbox") {
    return <input type="checkbox" {...common} checked={shown === true} onChange={(e) => onCommit(e.target.checked)} />;
  }
  if (kind === "select") {
    const choices = param.choices.includes(shown) ? param.choices : [...param.choices, shown]; // a bad value shows
    const chosen = (event) => onCommit(choices.find((c) => valueText(c) === event.target.value));
    return (
      <select {...common} value={valueText(shown)} onChange={chosen}>
        {choices.map((choice) => (
          <option key={valueText(choice)} value={valueText(choice)}>
            {valueText(choice) || "(none)"}
          </option>
        ))}
      </select>
    );
  }
  return (
    <TextField
      id={id}
      required={required}
      kind={param.kind}
      value={value}
      placeholder={unsetText(param)}
      invalid={invalid}
      describedBy={describedBy}
      onCommit={onCommit}
    />
  );
}

// One parameter: `param` is the catalog's (or {name, kind: "json"} for one it lacks); `issues` are
// the check's messages for it.
export function ParamField({ param, value, issues, onCommit }) {
  const id = useId();
  const range = rangeText(param);
  const required = isRequired(param);
  const help = [param.doc, range, required || "default" in param ? unsetText(param) : ""].filter(Boolean).join("; ");
  const describedBy = [help && `${id}-help`, issues.length && `${id}-error`].filter(Boolean).join(" ") || undefined;
  return (
    <div className={`editor-field${issues.length ? " invalid" : ""}`} data-param={param.name}>
      <label htmlFor={id}>
        {param.name}
      </label>
      <Control
        id={id}
        param={param}
        value={value}
        required={required}
        invalid={issues.length > 0}
        describedBy={describedBy}
        onCommit={onCommit}
      />
      {help && (
        <p id={`${id}-help`} className="field-help">
          {help}
        </p>
      )}
      {issues.length > 0 && (
        <p id={`${id}-error`} className="field-error">
          {issues.join("; ")}
        </p>
      )}
    </div>
  );
}
