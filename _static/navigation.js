// Mends pydata-sphinx-theme issue 2451 (https://github.com/pydata/pydata-sphinx-theme/issues/2451)
// for sphinx-book-theme 1.3.0 with pydata-sphinx-theme 0.17.1: both themes render a
// ".primary-toggle" (and a ".secondary-toggle") button, and both give their click handlers
// to the first one in the page, the navbar's, which the book theme hides. The buttons a
// reader sees (in the article's header) get none: on a phone, neither the table of contents
// (☰) nor "on this page" opens. Each visible button here passes its click on to the first one
// of its kind, which opens the sidebar's dialog on a narrow screen and folds the sidebar on a
// wide one, as both themes intend. Remove when the upstream issue is fixed.
document.addEventListener("DOMContentLoaded", () => {
  for (const kind of ["primary-toggle", "secondary-toggle"]) {
    const [first, ...others] = document.querySelectorAll("." + kind);
    for (const button of others) {
      button.addEventListener("click", (event) => {
        event.preventDefault();
        event.stopPropagation();
        first.click();
      });
    }
  }
});

// On a phone, "on this page" and the table of contents open as dialogs over the text. A tap
// on one of their links jumps, and the dialog closes, so that the reader sees where the link
// led instead of the list still lying over it.
document.addEventListener("DOMContentLoaded", () => {
  for (const which of ["primary", "secondary"]) {
    const dialog = document.getElementById(`pst-${which}-sidebar-modal`);
    dialog?.addEventListener("click", (event) => {
      if (event.target.closest("a[href]") && dialog.open) {
        dialog.close();
      }
    });
  }
});
