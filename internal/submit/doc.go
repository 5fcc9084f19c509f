// Package submit is `kustos submit`: it archives a directory (an exam environment's persistent
// volume, mounted read-only in a Job) as a ZIP stream and uploads it to a submission server,
// exiting 0 only once the server confirmed that the bytes it received have the size and SHA-256
// the command computed.
//
// A VM disk is tens of GiB, so nothing is copied to a temporary file and nothing is read twice
// when the upload goes well: the archive is written once, streamed in chunks to an upload
// session (a small subset of the tus protocol's core: POST creates the session, PATCH appends
// at Upload-Offset, HEAD tells the committed offset), and hashed as it goes; the size and
// SHA-256 travel in the request that completes the session. Because the archive is
// deterministic (entries sorted, Store, timestamps from the files' mtimes), a cut that the
// current chunk cannot cover is resumed by writing the archive again and skipping, while
// hashing, the prefix the server already has.
//
// The package owns the archive format (archive.go), the protocol's messages and their parsing
// (protocol.go, shared with the reference server), the client (upload.go) and the command
// (command.go). Package submittest is a server that implements the receiving side.
package submit
