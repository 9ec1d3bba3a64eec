/** The confirmation every control action passes: it names the PDU, the outlet and its label. */
import { h, replace } from "./dom.js";

let confirmDialog: HTMLDialogElement | null = null;

/**
 * Asks `question` with a confirm button labelled `verb`; resolves true only on that button. Cancel
 * has the focus, so Enter right after opening sends nothing.
 */
export function confirmAction(
  title: string,
  question: readonly (Node | string)[],
  verb: string,
  tone: string,
): Promise<boolean> {
  if (!confirmDialog) {
    confirmDialog = h("dialog", { id: "confirm", "aria-labelledby": "confirm-title" });
    document.body.appendChild(confirmDialog);
  }
  const dialog = confirmDialog;
  const form = h(
    "form",
    { method: "dialog" },
    h("h2", { id: "confirm-title" }, title),
    h("p", { id: "confirm-text" }, ...question),
    h(
      "div",
      { class: "buttons" },
      h("button", { value: "cancel", autofocus: true }, "Cancel"),
      h("button", { value: "confirm", class: `cmd tone-${tone} strong` }, verb),
    ),
  );
  replace(dialog, form);
  dialog.setAttribute("aria-describedby", "confirm-text");
  dialog.returnValue = "";
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "confirm"), { once: true });
    dialog.showModal();
  });
}
