// eval_int_expr and bind_repro_symbols (core/trace/int_expr.h): the sizes
// PyTorch writes in minifier files, and which symbol each SymInt input is.
#include "test_support.h"

#include "core/trace/int_expr.h"

using namespace kiln::trace;

namespace {

ReproInput symint(const std::string& name, const std::string& value) {
  ReproInput in;
  in.kind = "symint";
  in.name = name;
  in.value = value;
  return in;
}

ReproInput tensor(const std::string& name, std::vector<std::string> shape, const std::string& bytes) {
  ReproInput in;
  in.kind = "tensor";
  in.name = name;
  in.shape = std::move(shape);
  in.storage_bytes = bytes;
  return in;
}

}  // namespace

class TestIntExpr : public QObject {
  Q_OBJECT
 private slots:
  void evaluates_like_python() {
    QCOMPARE(*eval_int_expr("3136*8"), int64_t(25088));
    QCOMPARE(*eval_int_expr("2 + 3*4"), int64_t(14));
    QCOMPARE(*eval_int_expr("(2 + 3)*4"), int64_t(20));
    QCOMPARE(*eval_int_expr("-7 // 2"), int64_t(-4));
    QCOMPARE(*eval_int_expr("-7 % 3"), int64_t(2));
    QCOMPARE(*eval_int_expr("7 % -3"), int64_t(-2));
    QCOMPARE(*eval_int_expr("32*s0 + s1", {{"s0", 3}, {"s1", 5}}), int64_t(101));
    QVERIFY(!eval_int_expr("32*s9"));                       // unbound
    QVERIFY(!eval_int_expr("9223372036854775807 + 1"));     // overflow
    QVERIFY(!eval_int_expr("99999999999999999999"));        // too long for 64 bits
    QVERIFY(!eval_int_expr("4 // 0"));
    QVERIFY(!eval_int_expr("4 +"));
    QVERIFY(!eval_int_expr("import os"));
    QVERIFY(!eval_int_expr(""));
    QCOMPARE(expr_symbols("4*s0*s1 + s0"), (std::vector<std::string>{"s0", "s1"}));
  }

  void binds_symbols_only_when_the_file_says_which() {
    // The forward's annotation joins placeholder and symbol.
    std::vector<ReproInput> in = {symint("arg0_1", "1000"), tensor("arg1_1", {"s7", "28"}, "112*s7"), symint("arg2_1", "4"),
                                  tensor("arg3_1", {"s3"}, "4*s3")};
    SymbolBinding b = bind_repro_symbols(in, {"s7", "", "s3", ""});
    QCOMPARE(b.values, (SymbolValues{{"s3", 4}, {"s7", 1000}}));
    QVERIFY(b.unbound.empty());
    QCOMPARE(b.symbol_of.at("arg0_1"), std::string("s7"));

    // Without annotations: Dynamo lifts a tensor's new size symbols as
    // SymInt inputs right before it, so each symint binds the symbol of the
    // tensor after it.
    b = bind_repro_symbols(in, {});
    QCOMPARE(b.values, (SymbolValues{{"s3", 4}, {"s7", 1000}}));
    QVERIFY(b.unbound.empty());

    // Several before one tensor, created in the order they appear (file 19 of
    // the collection: symints 3, 500, 400 then a (1, s0, s1, s2) tensor).
    b = bind_repro_symbols({symint("arg0_1", "3"), symint("arg1_1", "500"), symint("arg2_1", "400"),
                            tensor("arg3_1", {"1", "s0", "s1", "s2"}, "4*s0*s1*s2"), symint("arg4_1", "300")},
                           {});
    QCOMPARE(b.values, (SymbolValues{{"s0", 3}, {"s1", 500}, {"s2", 400}}));
    QCOMPARE(b.symbol_of.at("arg1_1"), std::string("s1"));
    QCOMPARE(b.symints, (std::vector<std::string>{"arg4_1 = 300"}));

    // Appearing out of creation order, or more symints than new symbols, or
    // the symints all first: nothing says which is which, so nothing binds.
    b = bind_repro_symbols({symint("arg0_1", "3"), symint("arg1_1", "500"), tensor("arg2_1", {"s1", "s0"}, "4*s0*s1")}, {});
    QVERIFY(b.values.empty());
    QCOMPARE(b.unbound, (std::vector<std::string>{"s1", "s0"}));
    b = bind_repro_symbols({symint("arg0_1", "3"), symint("arg1_1", "500"), tensor("arg2_1", {"s0"}, "4*s0")}, {});
    QVERIFY(b.values.empty());
    b = bind_repro_symbols({symint("arg0_1", "1000"), symint("arg1_1", "4"), tensor("arg2_1", {"s7", "28"}, "112*s7"),
                            tensor("arg3_1", {"s3"}, "4*s3")},
                           {});
    QVERIFY(b.values.empty());
    QCOMPARE(b.symints, (std::vector<std::string>{"arg0_1 = 1000", "arg1_1 = 4"}));

    // One of each: only one way.
    b = bind_repro_symbols({symint("arg0_1", "1000"), tensor("arg1_1", {"s0", "1", "28", "28"}, "3136*s0")}, {});
    QCOMPARE(b.values, (SymbolValues{{"s0", 1000}}));

    // Older files named the symint by its symbol.
    b = bind_repro_symbols({tensor("x", {"s0"}, "4*s0"), symint("s0", "6")}, {});
    QCOMPARE(b.values, (SymbolValues{{"s0", 6}}));
  }
};

QTEST_GUILESS_MAIN(TestIntExpr)
#include "test_int_expr.moc"
