/**
 * The API key dialog (without sign-in): the key typed is checked against the service
 * (`GET /api/v1/key`) before it is kept, so a wrong one is found here, not at the first switch.
 * Enter saves (Save is the form's only submit button), Escape or Cancel closes it; the key stays in
 * this tab only (sessionStorage).
 */
import { apiKey, checkKey } from "./api.js";
import { h, replace, setText } from "./dom.js";

let keyDialog: HTMLDialogElement | null = null;

/** Opens the dialog; resolves true once a key the service accepts was saved. */
export function askForKey(): Promise<boolean> {
  if (!keyDialog) {
    keyDialog = h("dialog", { id: "key-dialog", "aria-labelledby": "key-title" });
    document.body.appendChild(keyDialog);
  }
  const dialog = keyDialog;
  const input = h("input", {
    id: "key-input",
    type: "password",
    autocomplete: "off",
    spellcheck: "false",
    required: true,
    "aria-describedby": "key-help key-error",
  });
  const error = h("p", { id: "key-error", class: "form-error", role: "alert" });
  const save = h("button", { type: "submit", class: "cmd strong" }, "Save key");
  const cancel = h("button", { type: "button", onClick: () => dialog.close("cancel") }, "Cancel");
  let saved = false;
  const form = h(
    "form",
    {
      onSubmit: (event: Event) => {
        event.preventDefault();
        void check();
      },
    },
    h("h2", { id: "key-title" }, "API key"),
    h(
      "p",
      { id: "key-help" },
      "Control needs the service's API key. It is checked with the service, then kept in this tab only (sessionStorage) and sent as X-Api-Key.",
    ),
    h("label", { for: "key-input" }, "API key"),
    input,
    error,
    h("div", { class: "buttons" }, cancel, save),
  );
  const check = async () => {
    const key = input.value;
    if (key === "") return;
    save.disabled = true;
    setText(save, "Checking…");
    setText(error, "");
    const answer = await checkKey(key);
    save.disabled = false;
    setText(save, "Save key");
    if (answer.ok) {
      apiKey.set(key);
      saved = true;
      dialog.close("save");
      return;
    }
    const why =
      answer.status === 401
        ? "This is not the service's API key."
        : answer.status === 403
          ? "Control is off: the service has no API key configured."
          : `The key could not be checked (${answer.status || "no answer"}).`;
    setText(error, `${why} ${answer.detail}`);
    input.setAttribute("aria-invalid", "true");
    input.select();
  };
  replace(dialog, form);
  dialog.returnValue = "";
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(saved), { once: true });
    dialog.showModal();
    input.focus();
  });
}
