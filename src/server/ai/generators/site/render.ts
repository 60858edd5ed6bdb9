// Our own HTML and CSS for `portfolio` and `landing` sites: content.json in, a static site out
// (index.html and styles.css, served by the runtime's static server). Every text is escaped and every
// link was checked by the content schema, so content from a prompt or a model cannot inject markup.
import { escapeHtml } from '../templates/common.js';
import type { SiteContent, SiteSection } from './content.js';

export function renderSite(content: SiteContent): { 'index.html': string; 'styles.css': string } {
  return { 'index.html': renderHtml(content), 'styles.css': renderCss(content) };
}

const e = escapeHtml;

function paragraphs(text: string): string {
  return text
    .split(/\n\s*\n/)
    .map((p) => p.trim())
    .filter(Boolean)
    .map((p) => `<p>${e(p).replace(/\n/g, '<br>')}</p>`)
    .join('\n');
}

function initials(title: string): string {
  const letters = title
    .split(/\s+/)
    .filter((w) => /^[\p{L}\p{N}]/u.test(w))
    .slice(0, 2)
    .map((w) => [...w][0]!.toUpperCase());
  return letters.join('') || '★';
}

function renderSection(section: SiteSection, content: SiteContent): string {
  const items = section.items.length
    ? `<div class="grid">\n${section.items
        .map((item, i) => {
          const heading = item.link
            ? `<a href="${e(item.link)}"${item.link.startsWith('http') ? ' rel="noopener"' : ''}>${e(item.title)}</a>`
            : e(item.title);
          const badge =
            content.kind === 'portfolio'
              ? `<span class="badge">${String(i + 1).padStart(2, '0')}</span>`
              : '';
          return `<article class="card">${badge}<h3>${heading}</h3>${item.description ? `<p>${e(item.description)}</p>` : ''}</article>`;
        })
        .join('\n')}\n</div>`
    : '';
  const contact =
    section.id === 'contact' && (content.contact.email || content.contact.links.length)
      ? `<ul class="contact">${content.contact.email ? `<li><a href="mailto:${e(content.contact.email)}">${e(content.contact.email)}</a></li>` : ''}${content.contact.links
          .map((link) => `<li><a href="${e(link.href)}" rel="noopener">${e(link.label)}</a></li>`)
          .join('')}</ul>`
      : '';
  return `<section id="${e(section.id)}">
<h2>${e(section.heading)}</h2>
${paragraphs(section.body)}
${items}
${contact}
</section>`;
}

function renderHtml(content: SiteContent): string {
  const nav = content.sections.map((s) => `<a href="#${e(s.id)}">${e(s.heading)}</a>`).join('');
  const cta = content.call_to_action
    ? `<a class="button" href="${e(content.call_to_action.href)}">${e(content.call_to_action.label)}</a>`
    : '';
  const hero =
    content.kind === 'portfolio'
      ? `<header class="hero portfolio">
<div class="avatar" aria-hidden="true">${e(initials(content.title))}</div>
<div><h1>${e(content.title)}</h1><p class="tagline">${e(content.tagline)}</p>${cta}</div>
</header>`
      : `<header class="hero landing">
<h1>${e(content.title)}</h1>
<p class="tagline">${e(content.tagline)}</p>
${cta}
</header>`;
  const band =
    content.kind === 'landing' && content.call_to_action
      ? `<aside class="band"><p>${e(content.title)}</p>${cta}</aside>`
      : '';
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${e(content.title)}</title>
<meta name="description" content="${e(content.tagline)}">
<link rel="stylesheet" href="styles.css">
</head>
<body class="${content.kind}">
<nav><a class="brand" href="#">${e(content.title)}</a><span>${nav}</span></nav>
${hero}
<main>
${content.sections.map((s) => renderSection(s, content)).join('\n')}
</main>
${band}
<footer>${e(content.footer)}</footer>
</body>
</html>
`;
}

function renderCss({ colours }: SiteContent): string {
  return `:root {
  --primary: ${colours.primary};
  --accent: ${colours.accent};
  --bg: ${colours.background};
  --text: ${colours.text};
  --muted: color-mix(in srgb, var(--text) 65%, var(--bg));
  --line: color-mix(in srgb, var(--text) 12%, var(--bg));
  --card: color-mix(in srgb, var(--text) 4%, var(--bg));
}
* { box-sizing: border-box; }
html { scroll-behavior: smooth; }
body { margin: 0; font: 17px/1.6 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--text); background: var(--bg); }
a { color: var(--primary); }
nav { position: sticky; top: 0; z-index: 1; display: flex; flex-wrap: wrap; gap: 1rem; justify-content: space-between; align-items: center; padding: .9rem 1.5rem; background: color-mix(in srgb, var(--bg) 88%, transparent); backdrop-filter: blur(8px); border-bottom: 1px solid var(--line); }
nav .brand { font-weight: 700; text-decoration: none; color: var(--text); }
nav span { display: flex; flex-wrap: wrap; gap: 1.25rem; }
nav span a { text-decoration: none; color: var(--muted); font-size: .95rem; }
nav span a:hover { color: var(--primary); }
.hero { padding: 5rem 1.5rem 4rem; }
.hero h1 { margin: 0 0 .75rem; font-size: clamp(2.2rem, 6vw, 3.6rem); line-height: 1.1; letter-spacing: -.02em; }
.hero .tagline { margin: 0 0 2rem; font-size: 1.2rem; color: var(--muted); max-width: 40rem; }
.hero.landing { text-align: center; background: linear-gradient(135deg, color-mix(in srgb, var(--primary) 14%, var(--bg)), var(--bg) 70%); }
.hero.landing .tagline { margin-left: auto; margin-right: auto; }
.hero.portfolio { display: flex; gap: 2.5rem; align-items: center; max-width: 62rem; margin: 0 auto; }
.avatar { flex: none; width: 8rem; height: 8rem; border-radius: 50%; display: grid; place-items: center; font-size: 2.6rem; font-weight: 700; color: #fff; background: linear-gradient(135deg, var(--primary), var(--accent)); }
.button { display: inline-block; padding: .8rem 1.6rem; border-radius: 999px; background: var(--primary); color: #fff; font-weight: 600; text-decoration: none; transition: transform .15s ease, box-shadow .15s ease; }
.button:hover { transform: translateY(-1px); box-shadow: 0 8px 24px color-mix(in srgb, var(--primary) 35%, transparent); }
main { max-width: 62rem; margin: 0 auto; padding: 0 1.5rem 3rem; }
section { padding: 3rem 0; border-top: 1px solid var(--line); }
section h2 { margin: 0 0 1rem; font-size: 1.8rem; }
section > p { max-width: 44rem; color: var(--muted); }
.grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(15rem, 1fr)); gap: 1.25rem; margin-top: 1.5rem; }
.card { position: relative; padding: 1.5rem; border: 1px solid var(--line); border-radius: 1rem; background: var(--card); }
.card h3 { margin: 0 0 .5rem; font-size: 1.15rem; }
.card h3 a { text-decoration: none; }
.card p { margin: 0; color: var(--muted); }
.badge { display: inline-block; margin-bottom: .75rem; font-weight: 700; color: var(--accent); font-variant-numeric: tabular-nums; }
.contact { list-style: none; padding: 0; display: flex; flex-wrap: wrap; gap: 1rem; }
.contact a { font-weight: 600; }
.band { text-align: center; padding: 3.5rem 1.5rem; background: var(--primary); color: #fff; }
.band p { margin: 0 0 1.25rem; font-size: 1.5rem; font-weight: 700; }
.band .button { background: #fff; color: var(--primary); }
footer { text-align: center; padding: 2.5rem 1.5rem; color: var(--muted); font-size: .9rem; border-top: 1px solid var(--line); }
@media (max-width: 640px) {
  .hero.portfolio { flex-direction: column; text-align: center; }
  .hero { padding: 3.5rem 1.25rem 3rem; }
}
`;
}
