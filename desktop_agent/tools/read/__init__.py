"""The Read tool: ``tool`` (ReadTool, the call in two stages off the event loop), ``files`` (pools, special
files, not-found), ``text`` (line ranges, caps, numbering), ``media`` (images, PDFs), ``notebook``."""
