// sieve._sieve, the serving half: what python/sieve/ray_serve.py builds Ray Serve deployments
// from. A shard replica answers with ShardServer (one shard's dense lists, keys and token
// states); the router runs the library's own Service (the JSON API of `sieve serve`) over the
// shard set, its shards reached through a Python object (PyShardRemote), so that the merge, the
// fusion and stage 2 are the library's and not a second implementation.
#include <cmath>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "index/shard_set.h"
#include "serve/service.h"
#include "sieve/error.h"
#include "sieve/index.h"

namespace py = pybind11;
using namespace sieve;

namespace {

using index::Ranked;

// A Python object with dense_lists(shard, pooled, depth, ef_search, nprobe), tokens(shard, docs,
// max_rows) and keys(shard, docs) (ray_serve._RemoteShards), as the library's ShardRemote. Each
// call takes the GIL; a Python exception becomes ShardUnavailable (the server's 503).
class PyShardRemote final : public ShardRemote {
 public:
  explicit PyShardRemote(py::object target) : target_(std::move(target)) {}
  ~PyShardRemote() override {
    py::gil_scoped_acquire gil;
    target_ = py::object();
  }

  std::vector<Ranked> dense_lists(size_t shard, size_t n, size_t dim, const float* pooled, size_t depth,
                                  const SearchParams& p) const override {
    py::gil_scoped_acquire gil;
    return guarded(shard, [&] {
      py::array_t<float> q({static_cast<py::ssize_t>(n), static_cast<py::ssize_t>(dim)});
      std::copy(pooled, pooled + n * dim, q.mutable_data());
      py::list lists = target_.attr("dense_lists")(shard, q, depth, p.ef_search, p.nprobe);
      std::vector<Ranked> out;
      for (py::handle item : lists) {
        auto pair = item.cast<py::tuple>();
        auto ids = pair[0].cast<py::array_t<int64_t, py::array::c_style | py::array::forcecast>>();
        auto scores = pair[1].cast<py::array_t<double, py::array::c_style | py::array::forcecast>>();
        if (ids.size() != scores.size()) throw ShardUnavailable("ids and scores of different lengths");
        Ranked r;
        for (py::ssize_t j = 0; j < ids.size(); ++j) {
          if (ids.data()[j] < 0) throw ShardUnavailable("a negative document id");
          if (!std::isfinite(scores.data()[j]))  // the merge sorts by score: NaN breaks its ordering
            throw ShardUnavailable("a non-finite score (" + std::to_string(scores.data()[j]) + ")");
          r.emplace_back(static_cast<uint32_t>(ids.data()[j]), scores.data()[j]);
        }
        out.push_back(std::move(r));
      }
      return out;
    });
  }

  std::vector<TokenStates> tokens(size_t shard, const std::vector<uint32_t>& docs, size_t max_rows) const override {
    py::gil_scoped_acquire gil;
    return guarded(shard, [&] {
      py::list got = target_.attr("tokens")(shard, docs, max_rows);
      std::vector<TokenStates> out;
      for (py::handle item : got) {
        auto a = item.cast<py::array_t<float, py::array::c_style | py::array::forcecast>>();
        if (a.ndim() != 2) throw ShardUnavailable("token states that are not a matrix");
        TokenStates t;
        t.length = static_cast<size_t>(a.shape(0));
        t.values.assign(a.data(), a.data() + a.size());
        out.push_back(std::move(t));
      }
      return out;
    });
  }

  std::vector<float> keys(size_t shard, const std::vector<uint32_t>& docs) const override {
    py::gil_scoped_acquire gil;
    return guarded(shard, [&] {
      auto a = target_.attr("keys")(shard, docs).cast<py::array_t<float, py::array::c_style | py::array::forcecast>>();
      return std::vector<float>(a.data(), a.data() + a.size());
    });
  }

 private:
  template <class Fn>
  auto guarded(size_t shard, Fn&& fn) const -> decltype(fn()) {
    try {
      return fn();
    } catch (py::error_already_set& e) {
      throw ShardUnavailable("shard " + std::to_string(shard) + " did not answer: " + std::string(e.what()));
    } catch (const py::cast_error& e) {
      throw ShardUnavailable("shard " + std::to_string(shard) + " answered in an unexpected form: " + e.what());
    } catch (const ShardUnavailable& e) {
      throw ShardUnavailable("shard " + std::to_string(shard) + ": " + e.what());
    }
  }

  py::object target_;
};

// One shard of a set, opened whole and without an encoder: what a shard replica answers.
class ShardServer {
 public:
  explicit ShardServer(const std::string& dir) {
    IndexOpenOptions o;
    o.load_encoder = false;
    index_ = Index::open(dir, o);
    SIEVE_THROW_IF_NOT(index_->stats().shards == 1, "'" << dir << "' is a shard set, not one shard of it");
  }

  py::list dense_lists(py::array_t<float, py::array::c_style | py::array::forcecast> pooled, size_t depth,
                       int ef_search, int nprobe) const {
    SIEVE_THROW_IF_NOT(pooled.ndim() == 2 && static_cast<size_t>(pooled.shape(1)) == index_->stats().dim,
                       "pooled keys must be an n x " << index_->stats().dim << " array");
    SearchParams p;
    p.ef_search = ef_search;
    p.nprobe = nprobe;
    const size_t n = static_cast<size_t>(pooled.shape(0));
    std::vector<Ranked> lists;
    {
      py::gil_scoped_release nogil;
      lists = index::dense_lists(*index_, n, pooled.data(), std::min<size_t>(depth, index_->size()), p);
    }
    py::list out;
    for (const Ranked& r : lists) {
      py::array_t<int64_t> ids(static_cast<py::ssize_t>(r.size()));
      py::array_t<double> scores(static_cast<py::ssize_t>(r.size()));
      for (size_t j = 0; j < r.size(); ++j) {
        ids.mutable_data()[j] = r[j].first;
        scores.mutable_data()[j] = r[j].second;
      }
      out.append(py::make_tuple(ids, scores));
    }
    return out;
  }

  py::list tokens(const std::vector<uint32_t>& docs, size_t max_rows) const {
    std::vector<TokenStates> got;
    {
      py::gil_scoped_release nogil;
      got = index_->tokens_of(docs, max_rows);
    }
    const auto dim = static_cast<py::ssize_t>(index_->stats().dim);
    py::list out;
    for (const TokenStates& t : got) {
      py::array_t<float> a({static_cast<py::ssize_t>(t.length), dim});
      std::copy(t.values.begin(), t.values.end(), a.mutable_data());
      out.append(a);
    }
    return out;
  }

  py::array_t<float> keys(const std::vector<uint32_t>& docs) const {
    const size_t dim = index_->stats().dim;
    py::array_t<float> a({static_cast<py::ssize_t>(docs.size()), static_cast<py::ssize_t>(dim)});
    for (size_t i = 0; i < docs.size(); ++i) {
      std::vector<float> k = index_->key(docs[i]);
      std::copy(k.begin(), k.end(), a.mutable_data() + i * dim);
    }
    return a;
  }

  size_t size() const { return index_->size(); }

 private:
  std::unique_ptr<Index> index_;
};

}  // namespace

void bind_serving(py::module_& m) {
  py::class_<ShardServer>(m, "ShardServer")
      .def(py::init<const std::string&>(), py::arg("path"))
      .def("dense_lists", &ShardServer::dense_lists, py::arg("pooled"), py::arg("depth"), py::arg("ef_search") = 0,
           py::arg("nprobe") = 0)
      .def("tokens", &ShardServer::tokens, py::arg("docs"), py::arg("max_rows"))
      .def("keys", &ShardServer::keys, py::arg("docs"))
      .def("__len__", &ShardServer::size);

  py::class_<serve::Service>(m, "Service")
      .def(py::init([](const std::string& index, const std::string& model, const std::string& verifier,
                       py::object remote, int threads, size_t workers, size_t search_slots) {
             serve::ServeOptions o;
             o.index_dir = index;
             o.model_dir = model;
             o.verifier = verifier;
             o.encoder.threads = threads;
             o.encoder_workers = workers;
             o.search_slots = search_slots;
             if (!remote.is_none()) o.remote = std::make_shared<PyShardRemote>(remote);
             py::gil_scoped_release nogil;
             serve::check_serve_options(o);
             return std::make_unique<serve::Service>(o);
           }),
           py::arg("index") = "", py::arg("model") = "", py::arg("verifier") = "", py::arg("remote") = py::none(),
           py::arg("threads") = 0, py::arg("workers") = 0, py::arg("search_slots") = 0)
      .def(
          "handle",
          [](serve::Service& s, const std::string& method, const std::string& path, const py::bytes& body,
             const std::map<std::string, std::string>& query) {
            std::string b = body;
            serve::Response r;
            {
              py::gil_scoped_release nogil;
              r = s.handle(method, path, b, query);
            }
            return py::make_tuple(r.status, py::bytes(r.body), r.content_type, r.headers);
          },
          py::arg("method"), py::arg("path"), py::arg("body") = py::bytes(), py::arg("query") = std::map<std::string, std::string>{});
}
