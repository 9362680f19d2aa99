/**
 * A link checker for the repository's Markdown, as GitHub renders it: every relative link (inline, reference-style,
 * image, or an `href`/`src` in HTML) names a file or directory of the repository, and every `#anchor` a heading of
 * the target Markdown file (its slug as GitHub computes it, github-slugger; duplicates numbered `-1`, `-2`) or an
 * HTML `id`/`name` in it; in another kind of file, `#L10` or `#L10-L20` within its lines. External http(s) links
 * are checked for form only (no network). Parsing is markdown-it's (CommonMark with GitHub's tables), so links in
 * code spans and code blocks are not links, and reference definitions are resolved as GitHub resolves them.
 */
import MarkdownIt from "markdown-it";
import type { Token } from "markdown-it";
import GithubSlugger from "github-slugger";
import { posix } from "node:path";

export interface LinkProblem {
  /** The Markdown file, relative to the repository. */
  file: string;
  /** 1-based line of the block the link is in. */
  line: number;
  link: string;
  problem: string;
}

/** What the checker knows of the repository. */
export interface Repository {
  /** Markdown files to check: path (relative, `/`-separated) → text. */
  markdown: ReadonlyMap<string, string>;
  /** Every file of the repository (relative paths); directories are their prefixes. */
  files: ReadonlySet<string>;
  /** The number of lines of a file that is not Markdown (for `#L<n>` anchors). */
  lineCount(path: string): number;
}

interface Link {
  href: string;
  line: number;
}

interface Parsed {
  links: Link[];
  anchors: Set<string>;
}

const md = new MarkdownIt({ html: true, linkify: false });

/** `id="…"` / `name="…"` of HTML elements, and `href`/`src` of links and images in HTML. */
const HTML_ANCHOR = /<[a-z][^>]*?\s(?:id|name)\s*=\s*["']([^"']+)["']/gi;
const HTML_LINK = /<(?:a|img|source)\b[^>]*?\s(?:href|src|srcset)\s*=\s*["']([^"']+)["']/gi;

/** The text of a heading as GitHub's slug sees it: what the heading renders to, without markup. */
function headingText(inline: Token): string {
  let text = "";
  for (const t of inline.children ?? []) {
    if (t.type === "text" || t.type === "code_inline") text += t.content;
    else if (t.type === "softbreak" || t.type === "hardbreak") text += " ";
    // html_inline (tags), images (no text in the heading's text content), emphasis and link markers add nothing.
  }
  return text;
}

function parse(text: string): Parsed {
  const tokens = md.parse(text, {});
  const links: Link[] = [];
  const anchors = new Set<string>();
  const slugger = new GithubSlugger();
  const fromHtml = (html: string, line: number): void => {
    for (const m of html.matchAll(HTML_ANCHOR)) anchors.add(m[1]!);
    for (const m of html.matchAll(HTML_LINK)) links.push({ href: m[1]!, line });
  };
  // Tokens inside a table cell have no line of their own: the row's is the nearest.
  let line = 1;
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!;
    if (t.map) line = t.map[0] + 1;
    if (t.type === "heading_open") anchors.add(slugger.slug(headingText(tokens[i + 1]!)));
    if (t.type === "html_block") fromHtml(t.content, line);
    if (t.type !== "inline") continue;
    // The line of each link: the block's first, plus the line breaks before it.
    let at = line;
    for (const c of t.children ?? []) {
      if (c.type === "softbreak" || c.type === "hardbreak") at++;
      else if (c.type === "link_open") links.push({ href: String(c.attrGet("href") ?? ""), line: at });
      else if (c.type === "image") links.push({ href: String(c.attrGet("src") ?? ""), line: at });
      else if (c.type === "html_inline") fromHtml(c.content, at);
    }
  }
  return { links, anchors };
}

/** What is wrong with the form of an absolute link, or undefined when nothing is. */
function externalProblem(href: string): string | undefined {
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(href)?.[1]?.toLowerCase();
  if (scheme === "mailto") return /^mailto:[^@\s]+@[^@\s]+\.[^@\s]+$/i.test(href) ? undefined : "not a mail address";
  if (scheme !== "http" && scheme !== "https") return `a ${scheme ?? "?"}: link, which a browser reading GitHub cannot follow (http, https and mailto only)`;
  if (/\s/.test(href)) return "a URL with white space in it";
  let url: URL;
  try {
    url = new URL(href);
  } catch {
    return "not a URL";
  }
  const host = url.hostname;
  // A DNS name (one label or more: `prometheus:9090` in a compose network is a host too), IPv4 or [IPv6].
  if (!/^(\[[0-9a-f:.]+\]|([a-z0-9]([a-z0-9-]*[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*\.?)$/i.test(host)) return `not a host name: '${host}'`;
  return undefined;
}

/** Every directory that holds a file of `files` ("" is the repository's root). */
function directoriesOf(files: ReadonlySet<string>): Set<string> {
  const dirs = new Set<string>([""]);
  for (const f of files) for (let d = posix.dirname(f); d !== "." && !dirs.has(d); d = posix.dirname(d)) dirs.add(d);
  return dirs;
}

/** Checks every Markdown file of `repo`; returns the broken links, in file and line order. */
export function checkLinks(repo: Repository): LinkProblem[] {
  const parsed = new Map<string, Parsed>();
  const parsedOf = (path: string): Parsed => {
    let p = parsed.get(path);
    if (p === undefined) parsed.set(path, (p = parse(repo.markdown.get(path) ?? "")));
    return p;
  };
  const directories = directoriesOf(repo.files);
  const problems: LinkProblem[] = [];
  for (const file of [...repo.markdown.keys()].sort()) {
    for (const { href, line } of parsedOf(file).links) {
      const report = (problem: string): void => void problems.push({ file, line, link: href, problem });
      if (href.trim() === "") {
        report("an empty link");
        continue;
      }
      if (/^[a-z][a-z0-9+.-]*:/i.test(href) || href.startsWith("//")) {
        const p = externalProblem(href.startsWith("//") ? `https:${href}` : href);
        if (p !== undefined) report(p);
        continue;
      }
      const hashAt = href.indexOf("#");
      const rawPath = (hashAt < 0 ? href : href.slice(0, hashAt)).replace(/\?.*$/, "");
      const rawAnchor = hashAt < 0 ? undefined : href.slice(hashAt + 1);
      let path: string;
      let anchor: string | undefined;
      try {
        path = decodeURIComponent(rawPath);
        anchor = rawAnchor === undefined ? undefined : decodeURIComponent(rawAnchor);
      } catch {
        report("a malformed %-escape");
        continue;
      }
      let target = file;
      if (path !== "") {
        const resolved = path.startsWith("/") ? posix.normalize(path.slice(1)) : posix.join(posix.dirname(file), path);
        target = resolved.replace(/\/$/, "");
        if (target === ".") target = "";
        if (target === ".." || target.startsWith("../")) {
          report("points outside the repository");
          continue;
        }
        if (!repo.files.has(target) && !directories.has(target)) {
          report(`no such file or directory: ${target}`);
          continue;
        }
      }
      if (anchor === undefined || anchor === "") continue;
      if (repo.markdown.has(target)) {
        if (!parsedOf(target).anchors.has(anchor)) report(`no heading or anchor '#${anchor}' in ${target}`);
      } else if (repo.files.has(target)) {
        const m = /^L(\d+)(?:-L(\d+))?$/.exec(anchor);
        const lines = repo.lineCount(target);
        if (m === null) report(`'#${anchor}' in ${target}: a file that is not Markdown has only line anchors (#L10, #L10-L20)`);
        else if (Number(m[1]) < 1 || Number(m[2] ?? m[1]) > lines || Number(m[2] ?? m[1]) < Number(m[1])) report(`${target} has ${lines} lines, not ${anchor}`);
      } else report(`'#${anchor}' on a directory`);
    }
  }
  return problems;
}
