/* A collapsed solution's header ("Solution to Exercise N") holds a link to its exercise. sphinx-togglebutton
   0.4 makes the whole header a toggle but finds no button for a click on that link: it throws
   "ReferenceError: button is not defined" and the link jumps to the exercise instead of opening the solution.
   A click anywhere in such a header (the link included) opens or closes the solution, through its button. */
document.addEventListener("click", (event) => {
  const target = event.target instanceof Element ? event.target : null;
  const title = target && target.closest(".admonition.toggle > .admonition-title");
  if (!title || target === title || target.closest("button.toggle-button")) return;
  const button = title.querySelector("button.toggle-button");
  if (!button) return;
  event.preventDefault();
  event.stopPropagation();
  button.click();
}, true);
