// Index builds and appends from documents held in memory. A build writes the batch as a BEIR
// JSON-lines corpus beside the index, hands it to build_index, and removes it; an add goes through
// a one-off IndexWriter (the server and Python keep theirs).
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "core/file_util.h"
#include "index/document_json.h"
#include "sieve/error.h"
#include "sieve/index.h"

namespace sieve {

namespace {

// A JSON-lines corpus of `docs` in a new file next to `beside`; removed when it goes out of scope.
class TempCorpus {
 public:
  TempCorpus(const std::string& beside, const std::vector<Document>& docs) {
    std::filesystem::path target = std::filesystem::absolute(beside).lexically_normal();
    if (target.filename().empty()) target = target.parent_path();
    std::error_code ec;  // the folder the index goes in, as a build from a corpus file makes it
    std::filesystem::create_directories(target.parent_path(), ec);
    std::string tmpl = target.string() + ".docs-XXXXXX.jsonl";
    const int fd = ::mkstemps(tmpl.data(), 6);
    SIEVE_THROW_IF_NOT(fd >= 0, "cannot create a temporary corpus file '" << tmpl << "': " << std::strerror(errno));
    path_ = tmpl;
    std::string out;
    for (size_t i = 0; i < docs.size(); ++i) {
      const Document& d = docs[i];
      SIEVE_THROW_IF_NOT(!d.id.empty(), "document " << i << " has an empty id");
      // Metadata and expiry travel too (the reader checks them again, as it does a file's).
      out += index::document_json(d).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      out += '\n';
    }
    size_t done = 0;
    while (done < out.size()) {
      const ssize_t w = ::write(fd, out.data() + done, out.size() - done);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        const int err = errno;
        ::close(fd);
        SIEVE_THROW("cannot write the temporary corpus file '" << path_ << "': " << std::strerror(err));
      }
      done += static_cast<size_t>(w);
    }
    ::close(fd);
  }
  ~TempCorpus() {
    if (!path_.empty()) std::remove(path_.c_str());
  }
  TempCorpus(const TempCorpus&) = delete;
  TempCorpus& operator=(const TempCorpus&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace

BuildReport build_index_from_documents(const std::string& model_dir, const std::vector<Document>& docs,
                                       const std::string& out, IndexBuildOptions opt, const EncoderOptions& enc) {
  SIEVE_THROW_IF_NOT(!docs.empty(), "no documents to index");
  TempCorpus corpus(out, docs);
  opt.format = CorpusFormat::Jsonl;
  return build_index(model_dir, corpus.path(), out, opt, enc);
}

BuildReport add_documents(const std::string& index_dir, const std::vector<Document>& docs, IndexBuildOptions opt,
                          const EncoderOptions& enc, const std::string& model_dir) {
  SIEVE_THROW_IF_NOT(!docs.empty(), "no documents to add");
  IndexOpenOptions oo;
  oo.model_dir = model_dir;
  oo.encoder = enc;
  return IndexWriter(index_dir, oo).add(docs, opt);
}

}  // namespace sieve
