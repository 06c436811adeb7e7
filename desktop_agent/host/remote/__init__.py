"""The phone page (issue 26): pairing, devices, the HTTPS server and its page — a client of the host's Inbox.

``server.RemoteServer`` serves it; ``identity`` holds the certificate and the pairing/answer cryptography;
``devices`` the paired devices and the single-use pairing codes; ``view`` what a question looks like on the page
and the reply its decision makes; ``page/`` the page's own files (no asset from elsewhere).
"""
