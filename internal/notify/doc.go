// Package notify delivers lifecycle.Notices — an owner's expiry warning with its extension
// links, the message that an environment was removed — to people: as JSON to a webhook (chat
// bridges, ticket systems) and by mail over SMTP (Mail; Batcher gathers one owner's notices into
// one message, and as a manager's Runnable sends the batches still gathering when it stops).
// Each implementation is a pipeline.Notifier; Multi sends to several, and NewChain builds the
// owners' channels the --notify-* flags turn on (ChainConfig, WebhookOptions), once for every
// detector. A Notice's links are
// credentials: no error or log line here carries them.
package notify
