// Small file helpers shared by all modules.
#pragma once

#include <string>

namespace sieve {

/// Reads a whole file into a string; throws sieve::Error naming the path when it cannot.
std::string read_file(const std::string& path);

/// Writes `content` to `path` atomically: a temp file in the same folder, fsync, then rename.
void write_file_atomic(const std::string& path, const std::string& content);

/// Makes a folder's entries (files created, renamed or removed in it) durable: fsync of the
/// folder; throws sieve::Error naming it when that fails.
void sync_dir(const std::string& dir);

/// Publishes the folder `staging` at `out`: a plain rename when `out` does not exist, else the two
/// are swapped in one step (renameat2 RENAME_EXCHANGE) and the old folder, now at `staging`, is
/// removed. `out` names a complete folder at every moment, old or new: a crash leaves one of them
/// there (and at worst the old one at `staging`), never none. The parent folder is synced. Throws
/// sieve::Error naming both when the swap fails.
void publish_dir(const std::string& staging, const std::string& out);

/// True when `path` names an existing regular file.
bool is_file(const std::string& path);

/// True when `path` names an existing directory.
bool is_dir(const std::string& path);

/// The folder of the running executable (from /proc/self/exe; "." when unknown).
std::string executable_dir();

/// Joins two path components with exactly one '/'.
std::string path_join(const std::string& a, const std::string& b);

}  // namespace sieve
