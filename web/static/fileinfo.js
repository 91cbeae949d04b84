// What the daemon says of a file beyond its lines (_meta.changesetd): that
// a generator wrote it, whose diff is then folded until asked for, and an
// image's size in pixels and bytes on each side.

import { el } from './page.js';

// generatedWhy is how the file is known to be generated ("" when it is
// not): "linguist-generated", the marker of its first lines, "lock file".
function generatedWhy(f) {
  const g = f?._meta?.changesetd?.generated;
  return typeof g === 'string' ? g : '';
}

function generatedText(why) {
  return why === 'linguist-generated' ? 'marked linguist-generated in .gitattributes'
    : why === 'lock file' ? 'a lock file' : `its first lines say “${why}”`;
}

// generatedBadge is the file row's badge of a generated file, or null.
function generatedBadge(f) {
  const why = generatedWhy(f);
  if (!why) return null;
  const b = el('span', 'gbadge', 'generated');
  b.title = `Generated: ${generatedText(why)}. Its diff is folded; it counts in the totals.`;
  b.setAttribute('aria-label', b.title);
  return b;
}

// generatedNote is what the folded diff of a generated file says.
function generatedNote(f) {
  return `Generated (${generatedText(generatedWhy(f))}): the diff is folded. `;
}

// byteSize writes a size in bytes as a person reads it: 512 B, 12.3 KB,
// 4.1 MB (of 1024).
function byteSize(n) {
  if (n < 1024) return `${n} B`;
  const units = ['KB', 'MB', 'GB'];
  let v = n / 1024;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${v < 10 ? v.toFixed(1) : v < 100 ? v.toFixed(1) : Math.round(v)} ${units[u]}`;
}

function sideText(s) {
  return `${s.width}×${s.height}, ${byteSize(s.bytes)}`;
}

// imageSummary says an image's size in pixels and bytes before and after
// ("640×480, 12.3 KB → 800×600, 15.1 KB"), or "" when the daemon read
// neither side's header.
function imageSummary(f) {
  const im = f?._meta?.changesetd?.image;
  if (!im || (!im.old && !im.new)) return '';
  if (im.old && im.new) return `Image: ${sideText(im.old)} → ${sideText(im.new)}`;
  if (im.new) return `Image: ${sideText(im.new)}${f.edit?.before ? '' : ', added'}`;
  return `Image: ${sideText(im.old)}${f.edit?.after ? '' : ', deleted'}`;
}

export { byteSize, generatedBadge, generatedNote, generatedWhy, imageSummary };
