#include "program_gen.h"

#include <cstdio>
#include <random>
#include <string>
#include <vector>

namespace kiln::fuzz {

namespace {

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

class Generator {
 public:
  Generator(uint64_t seed, const GenOptions& o) : rng_(seed), options_(o), seed_(seed) {}

  ProgramText run() {
    ProgramText text;
    ProgramBuilder b(text);
    width_ = pick<int>({4, 6, 8});
    batch_ = pick<int>({2, 3, 4});
    classes_ = pick<int>({2, 3});
    header(b);
    const int blocks = 1 + int(below(3));
    for (int i = 0; i < blocks; ++i) block_class(b, i);
    model_class(b, blocks);
    training(b);
    return text;
  }

 private:
  // Straight from mt19937_64's output, which the standard fixes, rather than
  // through <random>'s distributions, which each library implements its own way:
  // a seed gives the same program wherever the fuzzer was built.
  uint64_t below(uint64_t n) { return rng_() % n; }
  bool chance(double p) { return double(rng_() >> 11) * 0x1.0p-53 < p; }
  template <class T>
  T pick(std::initializer_list<T> xs) {
    return *(xs.begin() + below(xs.size()));
  }
  std::string w() const { return std::to_string(width_); }
  std::string half() const { return std::to_string(width_ / 2); }

  void header(ProgramBuilder& b) {
    b.line("import torch", false);
    b.line("import torch.nn as nn", false);
    b.line("import torch.nn.functional as F", false);
    b.blank();
    b.blank();
    b.open("def show(tag, t):");
    b.open("if t is None:");
    b.line("print(tag, None)", false);
    b.close();
    b.open("elif isinstance(t, torch.Tensor):");
    b.line("print(tag, list(t.shape), \" \".join([\"%.6g\" % v for v in t.detach().flatten().tolist()]))", false);
    b.close();
    b.open("else:");
    b.line("print(tag, t)", false);
    b.close();
    b.close();
    b.blank();
    b.blank();
  }

  // One op of a block's forward over `h` ([batch, width]); `k` numbers its members.
  void block_op(std::vector<std::string>& init, ProgramBuilder& fwd, int k) {
    const std::string K = std::to_string(k);
    switch (below(21)) {
      case 0:
      case 1:
        init.push_back("self.lin" + K + " = nn.Linear(" + w() + ", " + w() + (chance(0.3) ? ", bias=False)" : ")"));
        fwd.line("h = self.lin" + K + "(h)");
        break;
      case 2:
      case 3:
        fwd.line(pick<const char*>({"h = F.relu(h)", "h = torch.tanh(h)", "h = F.gelu(h)", "h = torch.sigmoid(h) * 2",
                                    "h = F.silu(h)", "h = F.leaky_relu(h, 0.1)"}));
        break;
      case 4:
        init.push_back("self.drop" + K + " = nn.Dropout(" + num(pick({0.2, 0.5})) + ")");
        fwd.line("h = self.drop" + K + "(h)");
        break;
      case 5: fwd.line("h = F.dropout(h, " + num(pick({0.1, 0.3})) + ", self.training)"); break;
      case 6:
        init.push_back("self.register_buffer(\"buf" + K + "\", torch.rand(" + w() + ") + 0.5)");
        fwd.line("h = h * self.buf" + K);
        break;
      case 7:
        init.push_back("self.p" + K + " = nn.Parameter(torch.randn(" + w() + ") * 0.1)");
        fwd.line(chance(0.5) ? "h = h + getattr(self, \"p" + K + "\")" : "h = h + self.p" + K);
        break;
      case 8:
        init.push_back("self.ln" + K + " = nn.LayerNorm(" + w() + ")");
        fwd.line("h = self.ln" + K + "(h)");
        break;
      case 9:
        fwd.line("h = h.view(h.shape[0], " + half() + ", 2).transpose(1, 2).reshape(h.shape[0], " + w() + ")");
        break;
      case 10:
        fwd.line(chance(0.5) ? "h = h.clone()" : "h = h * 1.0");
        fwd.line(pick<const char*>({"h.mul_(1.5)", "h.add_(0.25)", "h.clamp_(-2.0, 2.0)"}));
        break;
      case 11: fwd.line("h = torch.cat([h[:, :" + half() + "] * 2, h[:, " + half() + ":]], dim=1)"); break;
      case 12: fwd.line("h = F.softmax(h, dim=-1) * " + w()); break;
      case 13: fwd.line("h = h + x"); break;
      case 14:
        // A running statistic, as batch norm keeps one: updated in forward, never differentiated.
        init.push_back("self.register_buffer(\"stat" + K + "\", torch.zeros(" + w() + "))");
        fwd.open("with torch.no_grad():");
        fwd.line("self.stat" + K + ".mul_(0.9).add_(h.mean(0) * 0.1)");
        if (chance(0.4)) {
          // A graph break inside no_grad: the region after it is entered with
          // grad mode off and turns it back on.
          fwd.open("if self.stat" + K + ".sum() > 0.123:");
          fwd.line("self.stat" + K + ".mul_(0.5)");
          fwd.close();
        }
        fwd.close();
        break;
      case 15:
        // Data-dependent control flow: a graph break.
        fwd.open("if h.sum() > 0.123:");  // off zero: a centred h sums to rounding noise there
        fwd.line("h = h * 0.5");
        fwd.close();
        fwd.open("else:");
        fwd.line("h = h + 0.1");
        fwd.close();
        break;
      case 16:
        fwd.line(pick<const char*>({"h = torch.where(h > 0, h, h * 0.1)", "h = h - h.mean(dim=-1, keepdim=True)",
                                    "h = h * h.sum(dim=0, keepdim=True).tanh()", "h = torch.sqrt(h * h + 1.0)"}));
        break;
      case 17:
        init.push_back("self.calls = 0");
        fwd.line("self.calls += 1");
        break;
      case 18:
        init.push_back("self.w" + K + " = nn.Parameter(torch.randn(" + w() + ", " + w() + ") * 0.3)");
        fwd.line(chance(0.5) ? "h = h @ self.w" + K : "h = torch.matmul(h, self.w" + K + ".t())");
        break;
      case 19:
        // Seeded noise drawn inside the region: every backend must draw what eager draws.
        fwd.line(pick<const char*>({"h = h + torch.randn_like(h) * 0.1", "h = h * (torch.rand(h.shape) + 0.5)"}));
        break;
      default:
        // Python control flow on a shape: guarded, recompiles when the batch changes.
        fwd.open("if h.shape[0] > " + std::to_string(batch_) + ":");
        fwd.line("h = h * 1.1");
        fwd.close();
        break;
    }
  }

  void block_class(ProgramBuilder& b, int index) {
    std::vector<std::string> init;
    ProgramText body;
    ProgramBuilder fwd(body);
    fwd.line("h = x", false);
    const int ops = 3 + int(below(6));
    for (int k = 0; k < ops; ++k) block_op(init, fwd, k);
    b.open("class Block" + std::to_string(index) + "(nn.Module):");
    b.open("def __init__(self):");
    b.line("super().__init__()", false);
    for (const std::string& s : init) b.line(s);
    b.close();
    b.blank();
    b.open("def forward(self, x):");
    b.nest(body);
    b.line("return h", false);
    b.close();
    b.close();
    b.blank();
    b.blank();
  }

  void model_class(ProgramBuilder& b, int blocks) {
    container_ = below(4);
    std::vector<std::string> names;
    for (int i = 0; i < blocks; ++i) names.push_back("Block" + std::to_string(i) + "()");
    b.open("class Model(nn.Module):");
    b.open("def __init__(self):");
    b.line("super().__init__()", false);
    std::string list;
    for (size_t i = 0; i < names.size(); ++i) list += (i ? ", " : "") + names[i];
    switch (container_) {
      case 0: b.line("self.blocks = nn.ModuleList([" + list + "])", false); break;
      case 1: b.line("self.blocks = nn.Sequential(" + list + ")", false); break;
      case 2: {
        std::string d;
        for (size_t i = 0; i < names.size(); ++i) d += (i ? ", " : "") + std::string("\"b") + std::to_string(i) + "\": " + names[i];
        b.line("self.blocks = nn.ModuleDict({" + d + "})", false);
        break;
      }
      default:
        for (int i = 0; i < blocks; ++i) b.line("self.b" + std::to_string(i) + " = " + names[size_t(i)], false);
        break;
    }
    b.line("self.head = nn.Linear(" + w() + ", " + std::to_string(classes_) + ")", false);
    b.close();
    b.blank();
    b.open("def forward(self, x):");
    switch (container_) {
      case 0:
        b.open("for blk in self.blocks:");
        b.line("x = blk(x)");
        b.close();
        break;
      case 1: b.line("x = self.blocks(x)"); break;
      case 2:
        b.open("for key in self.blocks:");
        b.line("x = self.blocks[key](x)");
        b.close();
        break;
      default:
        b.open("for i in range(" + std::to_string(blocks) + "):");
        b.line("x = getattr(self, \"b%d\" % i)(x)");
        b.close();
        break;
    }
    // Bounded features keep a few SGD steps from diverging: a run whose loss grows
    // into the thousands turns rounding into differences no tolerance separates
    // from a wrong gradient.
    b.line("return self.head(torch.tanh(x))", false);
    b.close();
    b.close();
    b.blank();
    b.blank();
  }

  void training(ProgramBuilder& b) {
    b.line("torch.manual_seed(" + std::to_string(seed_ % 100000) + ")", false);
    b.line("model = Model()", false);
    const bool adam = chance(0.4);
    if (adam)
      // eps well above rounding noise: Adam is scale-invariant, so a gradient that
      // is zero up to rounding (1e-7) would otherwise move a parameter by lr.
      b.line("opt = torch.optim.Adam(model.parameters(), lr=0.01, eps=1e-3)", false);
    else
    {
      // Drawn one after the other: the order of two calls in one expression is unspecified.
      const double momentum = pick({0.0, 0.9});
      const double weight_decay = pick({0.0, 0.01});
      b.line("opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=" + num(momentum) +
                 ", weight_decay=" + num(weight_decay) + ")",
             false);
    }
    const bool whole_step = chance(0.5);  // the training step compiled, else only the model
    const bool step_inside = chance(0.6);
    const bool set_to_none = chance(0.5);
    const bool accumulate = chance(0.2);  // zero_grad every other step, outside the step
    const bool clamp = whole_step && chance(0.3);
    const bool cross_entropy = chance(0.5);
    b.line(whole_step ? "net = model" : "net = torch.compile(model)", false);
    b.blank();
    b.blank();
    if (whole_step) b.line("@torch.compile", false);
    b.open("def train_step(x, t):");
    if (!accumulate) b.line(std::string("opt.zero_grad(set_to_none=") + (set_to_none ? "True" : "False") + ")");
    b.line("out = net(x)");
    b.line(cross_entropy ? "loss = F.cross_entropy(out, t)" : "loss = ((out - t) ** 2).mean()", false);
    b.line("loss.backward()");
    if (step_inside) b.line("opt.step()");
    if (clamp) {
      b.open("with torch.no_grad():");
      b.open("for q in model.parameters():");
      b.line("q.clamp_(-1.0, 1.0)");
      b.close();
      b.close();
    }
    b.line("return loss", false);
    b.close();
    b.blank();
    b.blank();
    const int change_at = chance(0.4) ? 1 + int(below(uint64_t(std::max(1, options_.steps - 1)))) : options_.steps;
    b.open("for i in range(" + std::to_string(options_.steps) + "):");
    b.line("bs = " + std::to_string(batch_) + " if i < " + std::to_string(change_at) + " else " + std::to_string(batch_ + 1),
           false);
    b.line("x = torch.randn(bs, " + w() + ")", false);
    b.line(cross_entropy ? "t = torch.randint(0, " + std::to_string(classes_) + ", (bs,))"
                         : "t = torch.randn(bs, " + std::to_string(classes_) + ")",
           false);
    if (accumulate) {
      b.open("if i % 2 == 0:");
      b.line(std::string("opt.zero_grad(set_to_none=") + (set_to_none ? "True" : "False") + ")");
      b.close();
    }
    b.line("loss = train_step(x, t)", false);
    if (!step_inside) b.line("opt.step()");
    b.line("show(\"loss%d\" % i, loss)");
    b.close();
    if (chance(0.5)) {
      b.line("model.eval()");
      b.open("with torch.no_grad():");
      b.line(std::string("show(\"eval\", ") + (whole_step ? "torch.compile(model)" : "net") + "(torch.randn(2, " + w() + ")))");
      b.close();
    }
    b.open("for name, p in model.named_parameters():");
    b.line("show(name, p)");
    b.line("show(name + \".grad\", p.grad)");
    b.close();
    b.open("for name, buf in model.named_buffers():");
    b.line("show(name, buf)");
    b.close();
    b.open("for j, p in enumerate(model.parameters()):");
    b.line("state = opt.state[p]", false);
    b.open("for key in sorted(state.keys()):");
    b.line("show(\"opt%d.%s\" % (j, key), state[key])");
    b.close();
    b.close();
    b.open("for name, m in model.named_modules():");
    b.open("if hasattr(m, \"calls\"):");
    b.line("print(name, \"calls\", m.calls)");
    b.close();
    b.close();
  }

  std::mt19937_64 rng_;
  GenOptions options_;
  uint64_t seed_;
  int width_ = 4, batch_ = 2, classes_ = 2;
  uint64_t container_ = 0;
};

}  // namespace

ProgramText generate_program(uint64_t seed, const GenOptions& options) { return Generator(seed, options).run(); }

}  // namespace kiln::fuzz
