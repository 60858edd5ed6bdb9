// After a failed save, take the user to the first field marked invalid (it may be far above the
// button they pressed), once React has rendered the marks.
export function focusFirstInvalid(root: HTMLElement | null): void {
  requestAnimationFrame(() => {
    const field = root?.querySelector<HTMLElement>('[aria-invalid="true"]');
    if (!field) return;
    field.scrollIntoView({ block: 'center', behavior: 'smooth' });
    field.focus({ preventScroll: true });
  });
}
