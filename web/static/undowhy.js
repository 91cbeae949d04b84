// Undo this hunk and tell the agent why: one action on a hunk (its
// header's button, or U on the current hunk) that asks for the reason in
// a small box, leaves it as a comment on the hunk's lines for the agent's
// next prompt and reverts the hunk. Both name the versions that were on
// the screen when the person acted (intent.js).
//
// The comment goes first and the revert only once the daemon has stored
// it: a comment on lines the revert takes away can be anchored only while
// they are there (on a working tree between turns the daemon snapshots
// them, see view-comments.js anchorFor). A refused comment stops there,
// nothing reverted; a refused revert takes the comment back, so no
// comment is left about an undo that did not happen.

import { newId, wholeLines } from './comments.js';
import { revertHunksText } from './confirm.js';
import { intent, shownVersions } from './intent.js';
import { el, errText, toast, ui } from './page.js';
import { online } from './selectors.js';
import { anchorFor, canComment } from './view-comments.js';
import { hunkTarget } from './view-diff.js';

// canUndoWithReason says whether hunk hi of the diff shown can be undone
// with a reason: it can be reverted and commented on.
function canUndoWithReason(hi) {
  const h = hunkTarget(hi);
  return !!h && canComment() && h.op.status !== 'disabled' && h.op.status !== 'running' && online();
}

// undoWithReason asks why, then comments and reverts hunk hi.
async function undoWithReason(hi) {
  const h = hunkTarget(hi);
  if (!h || !canComment()) return;
  // What is on the screen now: the comment and the revert both name it,
  // whatever changes while the box is open.
  const shown = shownVersions([h.f.id]);
  const resource = h.f.edit?.after?.uri || h.f.edit?.before?.uri;
  const what = revertHunksText(ui.cs?.kind, h.path, [h.facts], null);
  const reason = await askReason(`${what}\n\nThe reason is left as a comment on these lines for the agent's next prompt.`);
  if (!reason) return;
  const ann = ui.ann;
  let anchor;
  try {
    anchor = await anchorFor(resource, wholeLines(h.facts.first - 1, h.facts.last - 1));
  } catch (e) {
    toast(`Nothing was undone: the comment cannot be placed (${errText(e)})`, 'error');
    return;
  }
  const a = {
    id: newId('a'), turnId: anchor.turnId, resource, resolved: false,
    entries: [{ id: newId('e'), text: `I undid this change (hunk ${h.facts.n}, ${linesText(h.facts)} as shown): its lines went back to their version before. Why: ${reason}` }],
  };
  if (anchor.range) a.range = anchor.range;
  if (anchor.onWorkingTree) a._meta = { 'changesetd/onWorkingTree': true };
  try {
    await settled(ann, intent(shown, { annotation: { type: 'annotations/set', annotation: a } }));
    // Settled without a refusal, but a snapshot after a reconnection
    // also drops what was pending: only a comment the daemon has counts.
    if (!ui.client.state(ann)?.annotations?.some((x) => x.id === a.id)) throw new Error('the daemon did not keep it');
  } catch (e) {
    toast(`Nothing was undone: the comment with the reason was refused (${errText(e)})`, 'error');
    return;
  }
  try {
    await intent(shown, { op: h.op.id, target: h.target });
  } catch (e) {
    let back = 'the comment was taken back';
    try {
      intent(null, { annotation: { type: 'annotations/removed', annotationId: a.id } });
    } catch (e2) {
      back = `the comment could not be taken back (${errText(e2)}): remove it by hand`;
    }
    toast(`Undo failed, ${back}: ${errText(e)}`, 'error');
    return;
  }
  toast(`Undid hunk ${h.facts.n} of ${h.path} and left the reason for the agent. Undo Revert puts the lines back.`);
}

function linesText(f) {
  return f.first === f.last ? `line ${f.first}` : `lines ${f.first}–${f.last}`;
}

// settled resolves once the daemon has echoed the action dispatched on
// channel as clientSeq seq, and rejects with the reason when it refuses
// it, or when the connection drops first.
function settled(channel, seq) {
  const c = ui.client;
  const pending = () => (c.channels.get(channel)?.optimistic || []).some((p) => p.clientSeq === seq);
  return new Promise((resolve, reject) => {
    const off = () => {
      c.removeEventListener('rejected', onRejected);
      c.removeEventListener('state', onState);
      c.removeEventListener('status', onStatus);
    };
    const onRejected = (e) => {
      if (e.detail.channel !== channel || e.detail.clientSeq !== seq) return;
      off();
      reject(new Error(e.detail.reason));
    };
    const onState = (e) => {
      if (e.detail.channel !== channel || pending()) return;
      off();
      resolve();
    };
    const onStatus = (e) => {
      if (e.detail.status !== 'disconnected') return;
      off();
      reject(new Error('the connection to the daemon dropped before it answered'));
    };
    c.addEventListener('rejected', onRejected);
    c.addEventListener('state', onState);
    c.addEventListener('status', onStatus);
    if (!pending()) {
      off();
      resolve();
    }
  });
}

// askReason shows the box that asks why, with text saying what the undo
// does; it resolves to the reason, or null when cancelled.
function askReason(text) {
  const d = reasonBox();
  const ta = d.querySelector('textarea');
  const ok = d.querySelector('button.ok');
  d.querySelector('p').textContent = text;
  ta.value = '';
  ok.disabled = true;
  return new Promise((resolve) => {
    const done = (reason) => {
      ok.onclick = null;
      d.querySelector('button.cancel').onclick = null;
      d.onclose = null;
      ta.onkeydown = null;
      if (d.open) d.close();
      resolve(reason);
    };
    const send = () => { if (ta.value.trim()) done(ta.value.trim()); };
    ta.oninput = () => { ok.disabled = !ta.value.trim(); };
    ta.onkeydown = (e) => {
      if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
        e.preventDefault();
        send();
      }
    };
    ok.onclick = send;
    d.querySelector('button.cancel').onclick = () => done(null);
    d.onclose = () => { if (!d.open) done(null); };
    d.showModal();
    ta.focus();
  });
}

function reasonBox() {
  let d = document.getElementById('undo-why');
  if (d) return d;
  d = el('dialog');
  d.id = 'undo-why';
  d.setAttribute('aria-labelledby', 'undo-why-text');
  const p = el('p');
  p.id = 'undo-why-text';
  const label = el('label', null, 'Why? The agent reads it on its next prompt.');
  const ta = el('textarea');
  ta.rows = 3;
  label.append(ta);
  const menu = el('menu');
  const cancel = el('button', 'cancel', 'Cancel');
  cancel.type = 'button';
  const ok = el('button', 'ok danger', 'Undo and tell the agent');
  ok.type = 'button';
  ok.title = 'Ctrl+Enter';
  menu.append(cancel, ok);
  d.append(p, label, menu);
  // The page's single keys are not for the box.
  d.addEventListener('keydown', (e) => e.stopPropagation());
  document.body.append(d);
  return d;
}

export { canUndoWithReason, undoWithReason };
