// Package view is a changeset's view model as a value: the state its
// subscribers hold, the review flags and hunk marks bound to the content
// they were given at, the view stamps of HEAD and the index, and the rules
// that turn a computed list of files into the actions that bring every
// subscriber to it. Computed results go in; actions to publish and the
// versions to check come out. It runs no goroutine, keeps nothing durable
// and publishes nothing: the session's actor owns a Model, feeds it what
// the workspaces computed, and publishes, stores and notifies from what it
// returns.
//
// What a client was shown is the Model's to answer: Shown is what an
// intent says it displayed (the view stamp and each file's content
// nonces), and ChangedSince compares it with what was published.
package view
