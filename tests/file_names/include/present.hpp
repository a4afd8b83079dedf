// A file that exists, named by docs/notes.md.
#pragma once
