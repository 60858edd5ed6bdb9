// Saving text as a file from the page: a Blob behind a temporary link with `download`, which a browser
// saves to its downloads and the desktop app offers with a save dialog. No Bridge call needed.
export function downloadText(fileName: string, text: string, type = 'application/json'): void {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const link = document.createElement('a');
  link.href = url;
  link.download = fileName;
  link.style.display = 'none';
  document.body.append(link);
  link.click();
  link.remove();
  // The download has its own copy by the time the click returns; a moment later is safe everywhere.
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
