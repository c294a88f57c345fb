// CpuGenerator and the random fills against numbers PyTorch 2.11 printed on the
// CPU for the same seeds and calls, compared bit for bit.
#include <QtTest/QtTest>

#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "core/tensor/generator.h"
#include "test_support.h"

using namespace kiln;

namespace {

struct ExpectedHashes {
  const char* name;
  std::vector<std::string> vectorized;  // seeds 0, 1, 42, 1234
  std::vector<std::string> portable;    // empty: same as vectorized
};

struct ExpectedValues {
  const char* name;
  int output;
  std::vector<double> values;
};

constexpr uint64_t kSeeds[] = {0, 1, 42, 1234};

// FNV-1a 64 of each result's bytes (row-major; several outputs joined by commas), for seeds
// 0, 1, 42, 1234: printed by PyTorch 2.11 CPU (scratch script, H200 host, Xeon with AVX512).
// `vectorized` is PyTorch's default ATEN_CPU_CAPABILITY there (avx512; avx2 printed the same),
// `portable` is ATEN_CPU_CAPABILITY=default, left empty where it printed the same.
const std::vector<ExpectedHashes> kExpectedHashes = {
    {"rand5", {"4530ae1f72c05e76", "b87e0a2ac6341eda", "280af9eaf234580c", "182743c2acc95c06"}, {}},
    {"rand3x7", {"9ce5fe44037f9ab0", "2a88edcba7f2dbc8", "3520473d9c7a7c53", "0fd8a974adf28df6"}, {}},
    {"randn5", {"cec5c9affc020eb6", "99b288e085f1c1bd", "0db62b496c414f74", "02a51da55c1bebb0"}, {}},
    {"randn16",
     {"28d49f8f92bf21d6", "0ed115f7c78ec68b", "080ffa5fbeb15154", "2fac46da4ff5def9"},
     {"120ff73397dfeb3e", "d92e0b6f10fa15d3", "a95d9f26c663ee60", "f3570b21b4a0c65f"}},
    {"randn17",
     {"9151e09be6bcf07a", "28487f75435983d0", "91ae8bd790a50356", "0040866a94abd8d2"},
     {"308fc3c5dcec3f7e", "4977def2d280aad7", "8a23582a0eb82189", "8bcd90524ca39f57"}},
    {"randn4x100",
     {"157a3e4368d6a90b", "ffb9cf2695a49e38", "0c7c09aa3153ce7f", "e04a22bd6b9717f1"},
     {"81d90f1560c72920", "679b030d06254c30", "c58057206395a774", "405fbe13815b8319"}},
    {"randn3_f64", {"ed67ebc485d317d6", "427e66f3e4d3a237", "7534c08c356197ec", "7d560648c41d085e"}, {}},
    {"randn20_f64", {"029924cecb0c65fe", "5d22e251701560d1", "e87ac96bc1bfd03a", "aafe791e181de973"}, {}},
    {"randn33_f64", {"f9f2b3f05ce4bd39", "7dff6a07b316b41f", "aef9cd0d237f1b7b", "352391e7576e4ec9"}, {}},
    {"randint_0_10_8", {"61458a4109afef85", "3d2566032b250b05", "6b3f7ea88d276265", "d0f1bcacba35e807"}, {}},
    {"randint_m5_2p40_4", {"b7e3888c1664a85f", "afc9d772a5cc6196", "e8d28b2d281a6345", "594ebf9c9993cf7e"}, {}},
    {"randint_0_10_f32", {"3be97d425129e3e5", "44b87517bbd53fc5", "3e058b316a600625", "a53efe3d74c9c8a8"}, {}},
    {"randint_m5_2p40_f64", {"7c7d04da4b4d933a", "be54807e16600ffa", "878a56dd3739435f", "e399a99f3d3f62bf"}, {}},
    {"randint_0_2p40_f32", {"9eb44f5c24384447", "41c23a74d1a375af", "f46550050ef4864c", "79702de0f8cd95b3"}, {}},
    {"randint_i8", {"51f107ee6b7e9469", "22738ae1fdbcbb91", "c8231ff3d7a2365b", "caac00c7c45d56be"}, {}},
    {"randint_i32", {"8a19aeba5d974e73", "e947b7dbb4e7ebe1", "deb38b99885a40df", "e1f9c4683d2a6a81"}, {}},
    {"randint_u8", {"8afa66529eac8e47", "85d23d2f52d2f75d", "c0e8f9b1debbeea3", "070ca9adb57e61ba"}, {}},
    {"randint_bool", {"6b2d60d80280e1f5", "07fa16f1b8f833f1", "cb361acfac4e088d", "ff5400f1b41316bc"}, {}},
    {"randint_f16", {"20b324a43e816748", "f9823641d25b1ca1", "91f4bf9e79318cc8", "608d67ebb5954187"}, {}},
    {"randint_bf16", {"dae0c098c09353a2", "42adaebdf0835bab", "9b848d44a1c0f8bc", "dc2258968c0268a5"}, {}},
    {"randint_t", {"2e48be91d20c6473", "9440f408039671e2", "7b79a9afc873716e", "d32d7fc94f665066"}, {}},
    {"random_i64", {"b0e8d175921bdd9d", "ce5d8a878ebe3e74", "259f05e7b0b98b68", "25c091964da034a6"}, {}},
    {"uniform_m2_3_10",
     {"325df14c38610425", "d5b4bb64df4a350a", "c05550c4544b5853", "b2c383b2ead3e070"},
     {"4fcbbcfa55f44e06", "6a02ec0cb82f1540", "c05550c4544b5853", "3464329e7b491455"}},
    {"uniform_m2_3_f64",
     {"a91f13e3c345afbd", "0e098df0485a8c68", "a737ac53ec4a2806", "adb31faa6c1b0b0c"},
     {"ca73cdb0f9668b41", "424b3f8711eed2f8", "47b4bbc82dca9eee", "7b5ce0377606ac92"}},
    {"uniform_m2_3_f16", {"498fe6eacd2d953b", "4595808290765326", "f054d6810383c3c6", "bb66ec81c0e6738e"}, {}},
    {"uniform_m2_3_bf16", {"7d3b14fc49d83a18", "8264995e6107afb9", "d28d8e3f29fbd0fd", "8d028ca539bb2582"}, {}},
    {"uniform_p1_p7",
     {"cd48589981c3157c", "a6c36664d4041f58", "59b5b7df945cb5ab", "ca92fc3c4cf1548c"},
     {"bdcc85fed658d744", "a6c36664d4041f58", "4515b59f754c1a48", "ca92fc3c4cf1548c"}},
    {"rand5_f16", {"ccfdb97a332419a3", "eca3bd5c90ff2d0d", "3009ba0e123f8d42", "62a76f5529cf4454"}, {}},
    {"rand5_bf16", {"2f9434cf5210f0c3", "8353d8fc1c1e0158", "dfe7b0a87383ca26", "8644234749b461d4"}, {}},
    {"uniform_perm", {"d642296acf3993d6", "04dd390a3898573a", "9ebfc3e3324badbb", "51588dc173fd15d0"}, {}},
    {"uniform_tricky", {"641d5d61d773b9d5", "b430a4cd0bdcc0cd", "88b3af7473094030", "83b2509dddc081a6"}, {}},
    {"normal_t_5x4", {"7007f5ad890db67d", "e087d0c0915ff11e", "f8f18d3261e28a6b", "8a4491006e52315b"}, {}},
    {"normal_perm", {"0f1b78f625052d10", "a1f7cbfe0192639e", "5d9e9699735b8f66", "463ad0d75f014a07"}, {}},
    {"normal_slice", {"f9f9694b244e31ca", "31475954e17d3cbb", "cc5631f47e90f500", "8f10872a15223a08"}, {}},
    {"normal_2_3_32",
     {"42487f49eb1fd569", "abe42e11a7559750", "e3f2934df7f51981", "10397b865a306044"},
     {"58fbaf00c51aad3f", "36d65a20d929abf4", "a7b527055cd46ab5", "5135f672d651a36b"}},
    {"normal_2_3_20",
     {"618905cb8d97ceb4", "dc5f10da683ced4a", "44c1317208467fca", "aa8a30a75d51b569"},
     {"c0d0ca0bd0c5a5ec", "9dbb403ffeb5c910", "f387cb2bd7caeb68", "55b98a3bd5b28479"}},
    {"normal_2_3_5", {"1baf8bf5af1c5364", "990ffe8ea5b0db93", "07a6d15e5b34395d", "0ebbd93d0829b035"}, {}},
    {"normal_2_3_20_f64",
     {"a182a18820e3b31b", "b316aec5590f77ed", "6353f5d773284d46", "1da486630d824540"},
     {"49b10fe1b7f041d2", "0c35739f8b954555", "77b9b439acc49690", "60fe833f1bc89a90"}},
    {"normal_2_3_nc", {"b55dbc81853202ac", "228a4039e7f7a5ad", "b9881efa7ab41d7f", "0dde9e05717db2fa"}, {}},
    {"randn5_f16", {"b0ab3d898724cfb4", "6e628d6fb57e8bbb", "96c6201dfd060a7a", "456a5bc569c46ca8"}, {}},
    {"randn20_f16", {"59a52de2e7a25235", "08ceaeb0ed5257a9", "c5ba02e68eccf384", "1611327c66117899"}, {}},
    {"randn5_bf16", {"3082f7feb64dcbbb", "c3c7910ff7fa81e7", "6092bdec9333a534", "17c5e329170f21db"}, {}},
    {"randn20_bf16", {"6b47ec63fe004b71", "06c85b535f6ec882", "415d85e78806f801", "2019ac32df378566"}, {}},
    {"normal_2_3_20_f16", {"ab6206e8758919b7", "62ca31a0543ae9e5", "9f04f4b5b9f7616f", "0a61287b5ce170c9"}, {}},
    {"normal_2_3_20_bf16", {"930288e794c6319c", "7d5208d582b127fe", "353230729fc3a630", "ac747fb119449e8a"}, {}},
    {"bernoulli_12_p03", {"946bc707fc9c3798", "ed7b7820d8c0cf28", "7d673a04ee520268", "28f58c31f9478698"}, {}},
    {"bernoulli_f64", {"54a0ab9fd1a8d6b8", "79fd12d4734a4b18", "de3d97a954145b98", "ff3ab8cae45604b8"}, {}},
    {"bernoulli_nc", {"946bc707fc9c3798", "ed7b7820d8c0cf28", "7d673a04ee520268", "28f58c31f9478698"}, {}},
    {"bernoulli_i64", {"960f62af50b40005", "190f3f1ca49d3bc4", "44a038e41d606c05", "c299039f91b6bbc5"}, {}},
    {"bernoulli_bool", {"145026df0f47bb57", "193d32348bed381f", "dca4de09f4340e3a", "41184bfc74c3b3bf"}, {}},
    {"bernoulli_f16", {"9a053811eb7b02f1", "b2b5380de6c4b921", "bffb98067ae43de1", "e6b2e7a8a0f71971"}, {}},
    {"bernoulli_1000", {"7f773dba93f44335", "7918708c45d8b358", "bee54dbfdcca1578", "71b6e243de1077e5"}, {}},
    {"bernoulli_tensor_p", {"992f7b8733377195", "1ef977549163d8f5", "961ef607fe0e1bf5", "aca7645b3a02cea5"}, {}},
    {"bernoulli_tensor_p64", {"54a0ab9fd1a8d6b8", "79fd12d4734a4b18", "de3d97a954145b98", "ff3ab8cae45604b8"}, {}},
    {"exp_1p5_8", {"be008397788c171c", "706c4f5706adff00", "65e9cc3381eaf718", "dffffe8f9ba78db4"}, {}},
    {"exp_f64", {"42d980dbb3330d78", "02e1b7850ae0171c", "3f47f1b2070ca3b1", "7ceed0ebec4a074f"}, {}},
    {"exp_nc", {"eaad12f1f7dd56d7", "c58b6404003c89cd", "afbe579cb1b88068", "6922b34dec2789c1"}, {}},
    {"exp_f16", {"1a1478a6fa5709f1", "9d929328f346eee1", "085943020bc440b5", "6c522f9001003882"}, {}},
    {"dropout20", {"2a5754e4426474a5", "8d84ed2ea5a17fe5", "4cab035fe4c40165", "71d05462d98acd65"}, {}},
    {"dropout1000", {"d65e679c6b27a548", "c327644486f11b08", "e5df4b13fe32c6c8", "fcd65115236203b8"}, {}},
    {"randperm10", {"dcdebc4114a6e5c4", "e069cf89cc73e784", "dff7fddfb00437c4", "ff17eb2d9e84b044"}, {}},
    {"randperm100", {"9ae368d6ea9379a5", "585ce0917afb9f05", "72e0cd4e4796a345", "19057cdce04d3e45"}, {}},
    {"randperm10_f32", {"eac86a75d38bfaf8", "4dab6c16cfedc538", "82b558e0b42359a8", "a3c495cce8f90198"}, {}},
    {"randperm1", {"a8c7f832281a39c5", "a8c7f832281a39c5", "a8c7f832281a39c5", "a8c7f832281a39c5"}, {}},
    {"mixed",
     {"2efa82f3601b8921,68b157eb80edb8c5,ab5a8a2ef81d85ac,3c43a7f96b8fefb2,74531213843e1890,"
       "238add64827707b3,bd72eee3e61a2b84,f47b80353d5c94f2,d96873d1496b65ab,47f0e4344366a6c9,"
       "5ab2968508d450ff",
      "b589f5ba88aec081,284f63e9a310a6b1,d370eddffd081109,e1b6b696991a3f4a,b32c9774d74882e2,"
       "b02e14d83ffea9b8,d82f4e4690774e61,c48663e0320f75c7,02f9f9785d601b9e,43764c79273d2f6c,"
       "d0b6b603a1dc2f53",
      "4379025ac931c428,2364bdfc81a0c583,631eb70c3651a205,420b990d87460efb,aedfe1ab43801488,"
       "655cc5adbd0c90fc,bbf8dd3dec4b425c,6a9fafc14d2ad725,76f187546f2b14e3,6dbcb1912d69ab1e,"
       "8f66d28e6ecd5211",
      "1bbb52d2d5ca0558,399a66b10c5dbb6b,5d27cd8d0c5c6be2,6b003452615afdc5,5559fb8ce100c748,"
       "6cce30a86f912d38,b73ee17688a758d9,5101aee66e2c9b53,c1e69d96b0a2e6e7,3ce92e877f643bc6,"
       "12e155e54578bff5"},
     {"2efa82f3601b8921,68b157eb80edb8c5,ab5a8a2ef81d85ac,3c43a7f96b8fefb2,685463272a453df7,"
       "238add64827707b3,bd72eee3e61a2b84,f47b80353d5c94f2,d96873d1496b65ab,47f0e4344366a6c9,"
       "5ab2968508d450ff",
      "b589f5ba88aec081,284f63e9a310a6b1,d370eddffd081109,e1b6b696991a3f4a,7565dbfceadb1bc3,"
       "b02e14d83ffea9b8,d82f4e4690774e61,c48663e0320f75c7,02f9f9785d601b9e,43764c79273d2f6c,"
       "d0b6b603a1dc2f53",
      "4379025ac931c428,2364bdfc81a0c583,631eb70c3651a205,420b990d87460efb,79bb84882fe1acc0,"
       "655cc5adbd0c90fc,bbf8dd3dec4b425c,6a9fafc14d2ad725,76f187546f2b14e3,6dbcb1912d69ab1e,"
       "8f66d28e6ecd5211",
      "1bbb52d2d5ca0558,399a66b10c5dbb6b,5d27cd8d0c5c6be2,6b003452615afdc5,d06816e32d7276c5,"
       "6cce30a86f912d38,b73ee17688a758d9,5101aee66e2c9b53,c1e69d96b0a2e6e7,3ce92e877f643bc6,"
       "12e155e54578bff5"}},
    {"linear100_10",
     {"d0ec77c6b77ea330,35f865ce7c528af1",
      "aadfe607a79a03d1,499d5d0d36336256",
      "69b334ceca44b74a,da3fead74f83e8c1",
      "9155ce0ed9601671,e804a49bf479c564"},
     {"dde9534c95103bd6,1d0d46d7696c358e",
      "99ca55c553bd537a,77c88fadbf4c672c",
      "8f29bf2698dbfbc7,122f2db7850e3307",
      "1e72f3d8dc4b7311,7ecdf6a038ca08ee"}},
    {"conv3_8_3",
     {"2d6e155761323f73,42f6e08b40ac1143",
      "3ad0b1d955ec14b1,e6803d26bee25da1",
      "b327aba6520b9298,2ee6e2bfddfc7f9d",
      "a82303d6fb83670a,607fd422837604dd"},
     {"263ee1d214b9b4e0,6522efb1b28f1456",
      "6af6f8e4642f9faf,fd8c633e1d7a7630",
      "5cbe9c1c130002ac,910bdb4b217c1c38",
      "97b3e94a1a894b93,5735d7da350acbc9"}},
    {"embedding10_4",
     {"550f5b1a0de8c136", "5cc475b4232ca4a0", "7bed02c1def48f2c", "d7684f8153747d27"},
     {"21f099c3ea960b61", "496871b38113c7b2", "f9cb193c9bea197a", "c7b30e8ed4671e53"}},
};


// Seed 0, values printed by PyTorch 2.11 CPU (ATEN_CPU_CAPABILITY avx512).
const std::vector<ExpectedValues> kSeed0Values = {
    {"rand5", 0,
     {0.49625658988952637, 0.7682217955589294, 0.08847743272781372, 0.13203048706054688, 0.30742281675338745}},
    {"rand3x7", 0,
     {0.49625658988952637, 0.7682217955589294, 0.08847743272781372, 0.13203048706054688, 0.30742281675338745,
      0.6340786814689636, 0.4900934100151062, 0.8964447379112244, 0.455627977848053, 0.6323062777519226,
      0.3488934636116028, 0.40171730518341064, 0.022325754165649414, 0.16885894536972046, 0.2938884496688843,
      0.518521785736084, 0.6976675987243652, 0.800011396408081, 0.16102945804595947, 0.28226858377456665,
      0.6816085577011108}},
    {"randn5", 0,
     {1.5409960746765137, -0.293428897857666, -2.1787893772125244, 0.5684312582015991, -1.0845223665237427}},
    {"randn16", 0,
     {-1.1258398294448853, -1.152360200881958, -0.2505785822868347, -0.4338788092136383, 0.8487103581428528,
      0.6920091509819031, -0.31601276993751526, -2.1152193546295166, 0.32227492332458496, -1.2633347511291504,
      0.34998318552970886, 0.30813392996788025, 0.11984150856733322, 1.237657904624939, 1.1167771816253662,
      -0.2472781538963318}},
    {"randn17", 0,
     {-1.1258398294448853, -1.6959311962127686, 0.5666506290435791, 0.7935083508491516, 0.5988394618034363,
      -1.5550950765609741, -0.3413603901863098, 1.85300612449646, 0.46809640526771545, -0.5854975581169128,
      -0.1733967512845993, 0.18347793817520142, 1.3893661499023438, 1.586334228515625, 0.946298360824585,
      -0.843676745891571, 0.9318265914916992}},
    {"randn3_f64", 0,
     {1.5409961082440433, -0.2934289057609464, -2.1787893820745574}},
    {"randn20_f64", 0,
     {-2.310411800234176, -0.3732508612577643, -1.0608166785462863, 0.9995093547811761, -0.019964750907762653,
      0.2102998901016947, 0.17718935139366584, -0.830510051008449, 0.23871805816817063, 0.7335283685272841,
      -1.3218818291421377, 1.3148113651971234, -0.6870036940435463, 1.4880743158106724, -0.4484158047114511,
      -0.8910030351707375, 0.6748575435940039, 1.0468653769814655, 0.15429517864658948, -0.7498915228391941}},
    {"randint_0_10_8", 0,
     {4, 9, 3, 0, 3, 9, 7, 3}},
    {"randint_m5_2p40_4", 0,
     {741234585336, 506077272957, 291397093751, 841111833108}},
    {"uniform_m2_3_10", 0,
     {0.48128294944763184, 1.841109037399292, -1.5576128959655762, -1.3398475646972656, -0.46288591623306274,
      1.170393466949463, 0.450467050075531, 2.4822237491607666, 0.2781398892402649, 1.1615314483642578}},
    {"normal_t_5x4", 0,
     {1.5409960746765137, -1.0845223665237427, -0.7192575931549072, -0.8566746115684509, -0.5663174986839294,
      -0.293428897857666, -1.3985954523086548, -0.40334352850914, 1.1006041765213013, 0.3731146454811096,
      -2.1787893772125244, 0.40334683656692505, -0.5966353416442871, -1.0711873769760132, -0.8919953107833862,
      0.5684312582015991, 0.8380263447761536, 0.18203648924827576, 0.1227012425661087, -1.5091077089309692}},
    {"bernoulli_12_p03", 0,
     {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 1.0}},
    {"randperm10", 0,
     {4, 1, 7, 5, 3, 9, 0, 8, 6, 2}},
    {"dropout20", 0,
     {0.0, 0.0, 2.0, 0.0, 0.0, 0.0, 2.0, 2.0, 0.0, 2.0, 2.0, 2.0, 2.0, 0.0, 2.0, 2.0, 2.0, 2.0, 0.0, 0.0}},
    {"embedding10_4", 0,
     {-1.1258398294448853, -1.152360200881958, -0.2505785822868347, -0.4338788092136383, 0.8487103581428528,
      0.6920091509819031, -0.31601276993751526, -2.1152193546295166, 0.32227492332458496, -1.2633347511291504,
      0.34998318552970886, 0.30813392996788025, 0.11984150856733322, 1.237657904624939, 1.1167771816253662,
      -0.2472781538963318, -1.3526537418365479, -1.6959311962127686, 0.5666506290435791, 0.7935083508491516,
      0.5988394618034363, -1.5550950765609741, -0.3413603901863098, 1.85300612449646, -0.21586325764656067,
      -0.7425481677055359, 0.5627213716506958, 0.25962740182876587, -0.17396099865436554, -0.678746223449707,
      0.9382607340812683, 0.4888698160648346, 1.203223705291748, 0.08453469723463058, -1.2001394033432007,
      -0.004785737954080105, -0.5180748105049133, -0.30670419335365295, -1.580993890762329,
      1.7066433429718018}},
    {"exp_1p5_8", 0,
     {2.338884115219116, 0.8202565312385559, 0.4100293815135956, 1.6900790929794312, 0.690470278263092,
      1.04408597946167, 0.131168395280838, 0.28832560777664185}},
    {"rand5_f16", 0,
     {0.333984375, 0.27294921875, 0.80712890625, 0.59375, 0.40771484375}},
    {"randn20_bf16", 0,
     {1.4609375, 0.291015625, 0.9609375, 1.5703125, -0.671875, -0.11083984375, 0.89453125, -1.3359375, -0.875,
      0.32421875, 1.3671875, 0.059326171875, 2.03125, 0.5625, 0.2001953125, -0.69921875, 0.283203125,
      -0.80859375, -0.443359375, -0.44921875}},
    {"mixed", 0,
     {0.49625658988952637, 0.7682217955589294, 0.08847743272781372}},
    {"mixed", 1,
     {0.3643381893634796, 0.13439632952213287, 0.16421625018119812}},
    {"mixed", 2,
     {6, 6, 9}},
    {"mixed", 3,
     {0.3057610094547272}},
    {"mixed", 4,
     {-0.6658713221549988, -0.1116093322634697, -0.6135830879211426, 0.03159274160861969, -0.4926769733428955,
      0.2484147548675537, 0.4396958351135254, 0.11241118609905243, 0.6407923698425293, -2.316041946411133,
      -0.10230965167284012, 0.7924439907073975, -0.28966769576072693, 0.05250748619437218, 0.5228604674339294,
      2.3022053241729736, -1.4688938856124878}},
    {"mixed", 5,
     {-1.1088484525680542, 1.6253527402877808}},
    {"mixed", 6,
     {1.2333361736155686, -0.18318552095259907, -1.3140253567233087}},
    {"mixed", 7,
     {0.9336658785608346, 0.6086419936340745}},
    {"mixed", 8,
     {-1.6894433498382568}},
    {"mixed", 9,
     {0.3019222595510112, 1.1294931496378666, 1.7178953118403808, -0.8507240996822438, -0.8486392040092022}},
    {"mixed", 10,
     {-0.1847800463438034}},
    {"linear100_10", 1,
     {-0.008501732721924782, -0.07798793166875839, -0.0006149887922219932, -0.083004429936409,
      -0.0215130802243948, 0.05795462056994438, -0.069535031914711, -0.06740517914295197,
      -0.024417651817202568, -0.02741340361535549}},
};


// FNV-1a 64 over the elements' bytes in row-major order, as the script hashed
// tensor.contiguous().view(torch.uint8).
std::string fnv_hex(const Tensor& t) {
  Tensor c = t.contiguous();
  const auto* bytes = static_cast<const unsigned char*>(c.raw_data());
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < size_t(c.numel()) * c.itemsize(); ++i) h = (h ^ bytes[i]) * 0x100000001b3ull;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

Tensor E(Shape sizes, DType dtype = DType::Float32) { return Tensor::empty(std::move(sizes), dtype); }

Tensor rand(Shape sizes, CpuGenerator& g, DType dtype = DType::Float32) {
  Tensor t = E(std::move(sizes), dtype);
  uniform_(t, 0.0, 1.0, g);
  return t;
}
Tensor randn(Shape sizes, CpuGenerator& g, DType dtype = DType::Float32) {
  Tensor t = E(std::move(sizes), dtype);
  normal_(t, 0.0, 1.0, g);
  return t;
}
Tensor randint(int64_t low, int64_t high, Shape sizes, CpuGenerator& g, DType dtype = DType::Int64) {
  Tensor t = E(std::move(sizes), dtype);
  random_from_to_(t, low, high, g);
  return t;
}
Tensor uniform(Tensor t, double from, double to, CpuGenerator& g) {
  uniform_(t, from, to, g);
  return t;
}
Tensor normal(Tensor t, double mean, double std, CpuGenerator& g) {
  normal_(t, mean, std, g);
  return t;
}
Tensor bernoulli(Tensor t, double p, CpuGenerator& g) {
  bernoulli_(t, p, g);
  return t;
}
Tensor exponential(Tensor t, double lambd, CpuGenerator& g) {
  exponential_(t, lambd, g);
  return t;
}

// F.dropout(ones(n), p, training=True) on the CPU: a bernoulli_(1 - p) mask
// scaled by 1 / (1 - p), computed in float.
Tensor dropout_of_ones(int64_t n, double p, CpuGenerator& g) {
  Tensor mask = bernoulli(E({n}), 1 - p, g);
  float* m = mask.data<float>();
  float scale = 1.0f / float(1 - p);
  for (int64_t i = 0; i < n; ++i) m[i] = m[i] * scale;
  return mask;
}

// nn.Linear / nn.Conv2d reset_parameters: kaiming_uniform_(a=sqrt(5)) on the
// weight, then uniform(-1/sqrt(fan_in), 1/sqrt(fan_in)) on the bias; the bounds
// in Python's float64 math.
std::vector<Tensor> kaiming_layer(Shape weight_shape, int64_t fan_in, CpuGenerator& g) {
  const double a = std::sqrt(5.0);
  const double gain = std::sqrt(2.0 / (1 + std::pow(a, 2)));
  const double std_dev = gain / std::sqrt(double(fan_in));
  const double bound = std::sqrt(3.0) * std_dev;
  Tensor weight = uniform(E(weight_shape), -bound, bound, g);
  const double bias_bound = 1 / std::sqrt(double(fan_in));
  Tensor bias = uniform(E({weight_shape[0]}), -bias_bound, bias_bound, g);
  return {weight, bias};
}

using Case = std::function<std::vector<Tensor>(CpuGenerator&)>;

// The calls of the script, one per name, each right after seeding.
const std::vector<std::pair<std::string, Case>>& cases() {
  using D = DType;
  using G = CpuGenerator;
  static const std::vector<std::pair<std::string, Case>> all = {
      {"rand5", [](G& g) { return std::vector{rand({5}, g)}; }},
      {"rand3x7", [](G& g) { return std::vector{rand({3, 7}, g)}; }},
      {"randn5", [](G& g) { return std::vector{randn({5}, g)}; }},
      {"randn16", [](G& g) { return std::vector{randn({16}, g)}; }},
      {"randn17", [](G& g) { return std::vector{randn({17}, g)}; }},
      {"randn4x100", [](G& g) { return std::vector{randn({4, 100}, g)}; }},
      {"randn3_f64", [](G& g) { return std::vector{randn({3}, g, D::Float64)}; }},
      {"randn20_f64", [](G& g) { return std::vector{randn({20}, g, D::Float64)}; }},
      {"randn33_f64", [](G& g) { return std::vector{randn({33}, g, D::Float64)}; }},
      {"randint_0_10_8", [](G& g) { return std::vector{randint(0, 10, {8}, g)}; }},
      {"randint_m5_2p40_4", [](G& g) { return std::vector{randint(-5, int64_t(1) << 40, {4}, g)}; }},
      {"randint_0_10_f32", [](G& g) { return std::vector{randint(0, 10, {8}, g, D::Float32)}; }},
      {"randint_m5_2p40_f64", [](G& g) { return std::vector{randint(-5, int64_t(1) << 40, {4}, g, D::Float64)}; }},
      {"randint_0_2p40_f32", [](G& g) { return std::vector{randint(0, int64_t(1) << 40, {4}, g, D::Float32)}; }},
      {"randint_i8", [](G& g) { return std::vector{randint(-3, 3, {6}, g, D::Int8)}; }},
      {"randint_i32", [](G& g) { return std::vector{randint(-100, 100, {6}, g, D::Int32)}; }},
      {"randint_u8", [](G& g) { return std::vector{randint(0, 256, {6}, g, D::UInt8)}; }},
      {"randint_bool", [](G& g) { return std::vector{randint(0, 2, {6}, g, D::Bool)}; }},
      {"randint_f16", [](G& g) { return std::vector{randint(-50, 50, {6}, g, D::Float16)}; }},
      {"randint_bf16", [](G& g) { return std::vector{randint(-50, 50, {6}, g, D::BFloat16)}; }},
      {"randint_t",
       [](G& g) {
         Tensor t = E({3, 4}, D::Int64).t();
         random_from_to_(t, 0, 1000, g);
         return std::vector{t};
       }},
      {"random_i64",  // Tensor.random_() on int64: random64() mod 2^63
       [](G& g) {
         Tensor t = E({4}, D::Int64);
         for (int i = 0; i < 4; ++i) t.data<int64_t>()[i] = int64_t(g.random64() % (uint64_t(1) << 63));
         return std::vector{t};
       }},
      {"uniform_m2_3_10", [](G& g) { return std::vector{uniform(E({10}), -2, 3, g)}; }},
      {"uniform_m2_3_f64", [](G& g) { return std::vector{uniform(E({10}, D::Float64), -2, 3, g)}; }},
      {"uniform_m2_3_f16", [](G& g) { return std::vector{uniform(E({10}, D::Float16), -2, 3, g)}; }},
      {"uniform_m2_3_bf16", [](G& g) { return std::vector{uniform(E({10}, D::BFloat16), -2, 3, g)}; }},
      {"uniform_p1_p7", [](G& g) { return std::vector{uniform(E({10}), 0.1, 0.7, g)}; }},
      {"rand5_f16", [](G& g) { return std::vector{rand({5}, g, D::Float16)}; }},
      {"rand5_bf16", [](G& g) { return std::vector{rand({5}, g, D::BFloat16)}; }},
      {"uniform_perm",
       [](G& g) { return std::vector{uniform(E({3, 4, 5}).permute(std::vector<int64_t>{2, 0, 1}), 0, 1, g)}; }},
      {"uniform_tricky", [](G& g) { return std::vector{uniform(E({4, 6}).slice(0, 0, 4, 2).t(), 0, 1, g)}; }},
      {"normal_t_5x4", [](G& g) { return std::vector{normal(E({5, 4}).t(), 0, 1, g)}; }},
      {"normal_perm",
       [](G& g) { return std::vector{normal(E({3, 4, 5}).permute(std::vector<int64_t>{2, 0, 1}), 0, 1, g)}; }},
      {"normal_slice", [](G& g) { return std::vector{normal(E({6, 8}).slice(1, 0, 8, 3), 0, 1, g)}; }},
      {"normal_2_3_32", [](G& g) { return std::vector{normal(E({32}), 2, 3, g)}; }},
      {"normal_2_3_20", [](G& g) { return std::vector{normal(E({20}), 2, 3, g)}; }},
      {"normal_2_3_5", [](G& g) { return std::vector{normal(E({5}), 2, 3, g)}; }},
      {"normal_2_3_20_f64", [](G& g) { return std::vector{normal(E({20}, D::Float64), 2, 3, g)}; }},
      {"normal_2_3_nc", [](G& g) { return std::vector{normal(E({10, 2}).select(1, 0), 2, 3, g)}; }},
      {"randn5_f16", [](G& g) { return std::vector{randn({5}, g, D::Float16)}; }},
      {"randn20_f16", [](G& g) { return std::vector{randn({20}, g, D::Float16)}; }},
      {"randn5_bf16", [](G& g) { return std::vector{randn({5}, g, D::BFloat16)}; }},
      {"randn20_bf16", [](G& g) { return std::vector{randn({20}, g, D::BFloat16)}; }},
      {"normal_2_3_20_f16", [](G& g) { return std::vector{normal(E({20}, D::Float16), 2, 3, g)}; }},
      {"normal_2_3_20_bf16", [](G& g) { return std::vector{normal(E({20}, D::BFloat16), 2, 3, g)}; }},
      {"bernoulli_12_p03", [](G& g) { return std::vector{bernoulli(E({12}), 0.3, g)}; }},
      {"bernoulli_f64", [](G& g) { return std::vector{bernoulli(E({12}, D::Float64), 0.3, g)}; }},
      {"bernoulli_nc", [](G& g) { return std::vector{bernoulli(E({12, 2}).select(1, 0), 0.3, g)}; }},
      {"bernoulli_i64", [](G& g) { return std::vector{bernoulli(E({12}, D::Int64), 0.7, g)}; }},
      {"bernoulli_bool", [](G& g) { return std::vector{bernoulli(E({12}, D::Bool), 0.5, g)}; }},
      {"bernoulli_f16", [](G& g) { return std::vector{bernoulli(E({12}, D::Float16), 0.3, g)}; }},
      {"bernoulli_1000", [](G& g) { return std::vector{bernoulli(E({1000}), 0.5, g)}; }},
      {"bernoulli_tensor_p",
       [](G& g) {
         Tensor t = E({12});
         bernoulli_(t, Tensor::full({12}, Scalar(0.3), D::Float32), g);
         return std::vector{t};
       }},
      {"bernoulli_tensor_p64",
       [](G& g) {
         Tensor t = E({12}, D::Float64);
         bernoulli_(t, Tensor::full({12}, Scalar(0.3), D::Float64), g);
         return std::vector{t};
       }},
      {"exp_1p5_8", [](G& g) { return std::vector{exponential(E({8}), 1.5, g)}; }},
      {"exp_f64", [](G& g) { return std::vector{exponential(E({8}, D::Float64), 0.5, g)}; }},
      {"exp_nc", [](G& g) { return std::vector{exponential(E({8, 2}).select(1, 0), 1, g)}; }},
      {"exp_f16", [](G& g) { return std::vector{exponential(E({8}, D::Float16), 1, g)}; }},
      {"dropout20", [](G& g) { return std::vector{dropout_of_ones(20, 0.5, g)}; }},
      {"dropout1000", [](G& g) { return std::vector{dropout_of_ones(1000, 0.2, g)}; }},
      {"randperm10", [](G& g) { return std::vector{randperm(10, D::Int64, g)}; }},
      {"randperm100", [](G& g) { return std::vector{randperm(100, D::Int64, g)}; }},
      {"randperm10_f32", [](G& g) { return std::vector{randperm(10, D::Float32, g)}; }},
      {"randperm1", [](G& g) { return std::vector{randperm(1, D::Int64, g)}; }},
      {"mixed",
       [](G& g) {
         std::vector<Tensor> out;
         out.push_back(rand({3}, g));
         out.push_back(randn({3}, g));
         out.push_back(randint(0, 10, {3}, g));
         out.push_back(randn({1}, g));
         out.push_back(randn({17}, g));
         out.push_back(randn({2}, g));
         out.push_back(randn({3}, g, D::Float64));
         out.push_back(rand({2}, g, D::Float64));
         out.push_back(randn({1}, g));
         out.push_back(randn({5}, g, D::Float64));
         out.push_back(randn({1}, g));
         return out;
       }},
      {"linear100_10", [](G& g) { return kaiming_layer({10, 100}, 100, g); }},
      {"conv3_8_3", [](G& g) { return kaiming_layer({8, 3, 3, 3}, 3 * 3 * 3, g); }},
      {"embedding10_4", [](G& g) { return std::vector{randn({10, 4}, g)}; }},
  };
  return all;
}

std::vector<Tensor> run_case(const std::string& name, uint64_t seed) {
  for (const auto& [case_name, fn] : cases()) {
    if (case_name != name) continue;
    CpuGenerator g(seed);
    return fn(g);
  }
  qFatal("no case named %s", name.c_str());
}

std::string joined_hashes(const std::vector<Tensor>& outputs) {
  std::string s;
  for (const Tensor& t : outputs) {
    if (!s.empty()) s += ',';
    s += fnv_hex(t);
  }
  return s;
}

// Restores the process-wide build choice when a test changes it.
struct BuildGuard {
  RandomKernelBuild saved = random_kernel_build();
  explicit BuildGuard(RandomKernelBuild b) { set_random_kernel_build(b); }
  ~BuildGuard() { set_random_kernel_build(saved); }
};

// Draws made by `op` on a generator seeded with `seed`, counted by replaying
// random() on a fresh one until the states meet.
int draws_made(uint64_t seed, const std::function<void(CpuGenerator&)>& op) {
  CpuGenerator used(seed);
  op(used);
  CpuGenerator replay(seed);
  for (int k = 0; k < 10000; ++k) {
    if (replay == used) return k;
    replay.random();
  }
  return -1;
}

}  // namespace

class TestGenerator : public QObject {
  Q_OBJECT
 private slots:
  void engine_is_standard_mt19937();
  void random64_takes_high_half_first();
  void manual_seed_resets_cached_normal();
  void seed0_values_match_pytorch();
  void all_cases_match_pytorch_vectorized();
  void all_cases_match_pytorch_portable();
  void draw_counts_match_pytorch();
  void default_generator_is_used_by_default();
  void bad_arguments_are_user_errors();
};

void TestGenerator::engine_is_standard_mt19937() {
  for (uint64_t seed : {uint64_t(0), uint64_t(1), uint64_t(42), uint64_t(5489), (uint64_t(7) << 32) | 99}) {
    CpuGenerator g(seed);
    std::mt19937 reference(uint32_t(seed & 0xffffffffu));
    for (int i = 0; i < 2000; ++i) QCOMPARE(g.random(), uint32_t(reference()));
    QCOMPARE(g.initial_seed(), seed);
  }
  QCOMPARE(CpuGenerator().initial_seed(), uint64_t(67280421310721ULL));
}

void TestGenerator::random64_takes_high_half_first() {
  CpuGenerator a(7), b(7);
  uint64_t hi = b.random(), lo = b.random();
  QCOMPARE(a.random64(), (hi << 32) | lo);
}

void TestGenerator::manual_seed_resets_cached_normal() {
  CpuGenerator g(3);
  randn({3}, g);  // an odd count leaves the sine half of a pair cached
  QVERIFY(g.next_double_normal_sample().has_value());
  g.manual_seed(3);
  QVERIFY(!g.next_double_normal_sample().has_value());
  QVERIFY(g == CpuGenerator(3));
}

void TestGenerator::seed0_values_match_pytorch() {
  BuildGuard build(RandomKernelBuild::Vectorized);
  for (const ExpectedValues& want : kSeed0Values) {
    std::vector<Tensor> got = run_case(want.name, 0);
    QVERIFY2(want.output < int(got.size()), want.name);
    std::vector<double> values = test::values(got[size_t(want.output)]);
    QVERIFY2(values.size() == want.values.size(), want.name);
    for (size_t i = 0; i < values.size(); ++i)
      if (std::bit_cast<uint64_t>(values[i]) != std::bit_cast<uint64_t>(want.values[i]))
        QFAIL(qPrintable(QString("%1[%2] element %3: got %4, want %5")
                             .arg(want.name).arg(want.output).arg(i)
                             .arg(values[i], 0, 'g', 17).arg(want.values[i], 0, 'g', 17)));
  }
}

static void check_all_cases(RandomKernelBuild build) {
  BuildGuard guard(build);
  QStringList failures;
  for (const ExpectedHashes& want : kExpectedHashes) {
    const auto& hashes =
        build == RandomKernelBuild::Portable && !want.portable.empty() ? want.portable : want.vectorized;
    for (size_t s = 0; s < 4; ++s) {
      std::string got = joined_hashes(run_case(want.name, kSeeds[s]));
      if (got != hashes[s])
        failures << QString("%1 seed %2: got %3, want %4")
                        .arg(want.name).arg(kSeeds[s]).arg(QString::fromStdString(got))
                        .arg(QString::fromStdString(hashes[s]));
    }
  }
  QVERIFY2(failures.isEmpty(), qPrintable(failures.join("\n")));
  QCOMPARE(kExpectedHashes.size(), cases().size());
}

void TestGenerator::all_cases_match_pytorch_vectorized() { check_all_cases(RandomKernelBuild::Vectorized); }
void TestGenerator::all_cases_match_pytorch_portable() { check_all_cases(RandomKernelBuild::Portable); }

void TestGenerator::draw_counts_match_pytorch() {
  // Counts PyTorch 2.11 advanced its generator by (same for every seed): scalar
  // bernoulli_ and exponential_ take 64 bits per element whatever the dtype, a
  // float probability tensor 32 bits, randperm(n) n - 1 draws.
  for (uint64_t seed : kSeeds) {
    QCOMPARE(draws_made(seed, [](CpuGenerator& g) { bernoulli(E({12}), 0.3, g); }), 24);
    QCOMPARE(draws_made(seed, [](CpuGenerator& g) { bernoulli(E({12}, DType::Float64), 0.3, g); }), 24);
    QCOMPARE(draws_made(seed, [](CpuGenerator& g) {
               bernoulli_(E({12}), Tensor::full({12}, Scalar(0.3), DType::Float32), g);
             }), 12);
    QCOMPARE(draws_made(seed, [](CpuGenerator& g) { exponential(E({8}), 1.5, g); }), 16);
    QCOMPARE(draws_made(seed, [](CpuGenerator& g) { exponential(E({8}, DType::Float64), 1.5, g); }), 16);
    QCOMPARE(draws_made(seed, [](CpuGenerator& g) { dropout_of_ones(20, 0.5, g); }), 40);
    QCOMPARE(draws_made(seed, [](CpuGenerator& g) { randperm(10, DType::Int64, g); }), 9);
    QCOMPARE(draws_made(seed, [](CpuGenerator& g) { rand({5}, g); }), 5);
  }
}

void TestGenerator::default_generator_is_used_by_default() {
  BuildGuard build(RandomKernelBuild::Vectorized);
  default_cpu_generator().manual_seed(0);
  Tensor t = E({5});
  uniform_(t, 0, 1);
  // torch.manual_seed(0); torch.rand(5), printed by PyTorch 2.11 CPU.
  KILN_COMPARE_VALUES(t, {0.49625658988952637, 0.7682217955589294, 0.08847743272781372, 0.13203048706054688,
                          0.30742281675338745});
  QVERIFY(std::bit_cast<uint32_t>(t.data<float>()[0]) == std::bit_cast<uint32_t>(0.49625658988952637f));
}

void TestGenerator::bad_arguments_are_user_errors() {
  CpuGenerator g;
  auto message = [](const std::function<void()>& fn) -> std::string {
    try {
      fn();
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  QVERIFY(message([&] { uniform_(E({3}), 2, 1, g); }).find("[from, to)") != std::string::npos);
  QVERIFY(message([&] { uniform_(E({3}, DType::Int64), 0, 1, g); }).find("floating-point") != std::string::npos);
  QVERIFY(message([&] { normal_(E({3}), 0, -1, g); }).find("std >= 0.0") != std::string::npos);
  QVERIFY(message([&] { random_from_to_(E({3}), 5, 5, g); }).find("less than 'to'") != std::string::npos);
  QVERIFY(message([&] { random_from_to_(E({3}, DType::Int8), 0, 1000, g); }).find("out of bounds") !=
          std::string::npos);
  QVERIFY(message([&] { bernoulli_(E({3}), 1.5, g); }).find("[0, 1]") != std::string::npos);
  QVERIFY(message([&] { exponential_(E({3}), 0, g); }).find("lambda > 0.0") != std::string::npos);
  QVERIFY(message([&] { randperm(-1, DType::Int64, g); }).find("non-negative") != std::string::npos);
  QVERIFY(message([&] { randperm(3000, DType::Float16, g); }).find("2049") != std::string::npos);
  QVERIFY(message([&] { normal_(E({1}).expand({4}), 0, 1, g); }).find("single memory location") !=
          std::string::npos);
  // A refused fill draws nothing.
  QVERIFY(g == CpuGenerator());
}

QTEST_APPLESS_MAIN(TestGenerator)
#include "test_generator.moc"
