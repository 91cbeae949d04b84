// The commit dialog.

import { intent, shownVersions } from './intent.js';
import { $, el, errText, plain, toast } from './page.js';
import { csState, INDEX_LABEL, indexState, operationOf, pathOf } from './selectors.js';

// ---- commit -------------------------------------------------------------

// commitPlan is what a commit takes: the staged files when any are, else
// every change.
function commitPlan(s) {
  const files = s?.files || [];
  const staged = files.filter((f) => INDEX_LABEL[indexState(f)]);
  return staged.length ? { files: staged, staged: true } : { files, staged: false };
}

// commitText is the message the dialog starts with: a subject with the
// counts and one line per file, like the daemon's own. They count what
// the commit records: of a partly staged file, its staged part (the
// daemon's _meta.changesetd.staged); when that is unknown, the subject
// gives no counts rather than wrong ones.
function commitText(plan) {
  let add = 0;
  let del = 0;
  let known = true;
  const lines = plan.files.map((f) => {
    let c = { added: f.edit?.diff?.added ?? 0, removed: f.edit?.diff?.removed ?? 0 };
    if (plan.staged && indexState(f) === 'partial') c = f._meta?.changesetd?.staged || null;
    if (!c) {
      known = false;
      return `- ${operationOf(f)} ${pathOf(f)} (partly staged)`;
    }
    add += c.added;
    del += c.removed;
    return `- ${operationOf(f)} ${pathOf(f)} (+${c.added} -${c.removed})`;
  });
  return `Update ${plan.files.length} file(s)${known ? ` (+${add} -${del})` : ''}\n\n${lines.join('\n')}\n`;
}

function openCommit(op) {
  const s = csState();
  const shown = shownVersions();
  const plan = commitPlan(s);
  const d = $('commit-dialog');
  const n = plan.files.length;
  $('commit-what').textContent = plan.staged
    ? `Commit the ${n} staged file${n === 1 ? '' : 's'} (what is in the index):`
    : `Nothing is staged: commit all ${n} changed file${n === 1 ? '' : 's'}:`;
  const ul = $('commit-files');
  ul.replaceChildren();
  for (const f of plan.files) {
    const li = el('li', null, pathOf(f));
    if (indexState(f) === 'partial') li.append(el('span', 'muted', ' — only its staged part'));
    ul.append(li);
  }
  $('commit-message').value = commitText(plan);
  $('commit-error').textContent = '';
  const done = () => {
    $('commit-form').onsubmit = null;
    $('commit-cancel').onclick = null;
    if (d.open) d.close();
  };
  $('commit-cancel').onclick = done;
  $('commit-form').onsubmit = async (e) => {
    e.preventDefault();
    const message = $('commit-message').value;
    if (message.trim() === '') {
      $('commit-error').textContent = 'Write a commit message first.';
      $('commit-message').focus();
      return;
    }
    done();
    try {
      const res = await intent(shown, { op: op.id, meta: { message } });
      toast(res?.message ? plain(res.message) : `Committed ${n} file${n === 1 ? '' : 's'}`);
    } catch (err) {
      toast(`${op.label} failed: ${errText(err)}`, 'error');
    }
  };
  d.showModal();
  $('commit-message').focus();
}

export { openCommit };
