// SPDX-License-Identifier: Apache-2.0
// gr_fft_filter.cc — GNU Radio's gr::filter::kernel::fft_filter_ccc on the
// same CPI as bench_pc, for scripts/bench-compare.sh (not built by make).
//
//   gr_fft_filter C P R L SECONDS
//
// The reference is the same LFM as bench_pc (fs 100 MHz, B 40 MHz, tau =
// L/fs, Hamming window); the taps are conj(h) reversed, so the filter's
// output sample n+L-1 is the correlation gate n. fft_filter_ccc is a
// streaming overlap-add filter (fftsize = 2 * 2^ceil(log2 ntaps), nsamples =
// fftsize - ntaps + 1 outputs per FFT pair), single thread (nthreads = 1),
// FFTW_MEASURE plans (GNU Radio's own choice). Two runs, SECONDS each:
//
//   gnuradio         the same output as chirpd: every row is followed by
//                    L-1 zeros in the stream, so row j's gates 0..R-1 are
//                    output samples j*(R+L-1) + L-1 + g and no row bleeds
//                    into another (x[m] = 0 for m >= R, as chirpd defines
//                    it). This is what a user must feed fft_filter_ccc to
//                    get chirpd's result: (R+L-1)/R times the samples. The
//                    padded input is built once, outside the timing.
//   gnuradio-stream  all C*P rows pushed through back to back as one
//                    continuous stream (as a flowgraph would): rows bleed
//                    L-1 samples into the next row, so gates R-L+1..R-1 of
//                    every row are NOT chirpd's; less work, different output.
//
// Both streams are padded to a multiple of nsamples. Throughput is counted
// in C*P*R input samples for both (as bench_pc counts it). Prints two TSV
// lines like bench_pc --tsv. On stderr, one line: the relative L2 error of
// all R gates of rows 0, C*P/2 and C*P-1 of the same-output run (from the
// last timed run's output) and of gates 0..R-L of row 0 of the stream run
// (fresh filter) against a direct double-precision correlation. Exits 1 if
// either error exceeds 1e-4.
#include <gnuradio/filter/fft_filter.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <random>
#include <vector>

namespace {

double now()
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double cpu()
{
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

struct timing {
    double med, best, cmed;
};

// Two warm-up runs, then the median (and best) wall time and median CPU time
// of one run over at least SECONDS and 5 runs.
timing measure(const std::function<void()>& run, double seconds)
{
    run();
    run();
    std::vector<double> t, tc;
    double end = now() + seconds;
    while (t.size() < 5 || now() < end) {
        double t0 = now(), c0 = cpu();
        run();
        t.push_back(now() - t0);
        tc.push_back(cpu() - c0);
    }
    std::sort(t.begin(), t.end());
    std::sort(tc.begin(), tc.end());
    return {t[t.size() / 2], t[0], tc[tc.size() / 2]};
}

// Accumulates |y - ref|^2 and |ref|^2 over gates g0..g1-1 of one row x
// (x[m] = 0 for m >= R), y[g] being the filter's gate g.
void check_row(const gr_complex* x, size_t R, const std::vector<gr_complex>& h, const gr_complex* y,
               size_t g0, size_t g1, double& num, double& den)
{
    const size_t L = h.size();
    for (size_t g = g0; g < g1; g++) {
        std::complex<double> s = 0;
        for (size_t k = 0; k < L && g + k < R; k++)
            s += std::complex<double>(x[g + k]) * std::conj(std::complex<double>(h[k]));
        num += std::norm(std::complex<double>(y[g]) - s);
        den += std::norm(s);
    }
}

void tsv(const char* tool, size_t C, size_t P, size_t R, size_t L, const timing& tm)
{
    const double n = double(C * P * R), msps = n / tm.med / 1e6;
    std::printf("%s\t%zux%zux%zu\t%zu\t-\t1\tcf32\tcomplex\t%.4f\t%.2f\t%.2f\t%.4f\t%.4f\t%.2f\n", tool, C, P,
                R, L, tm.med * 1e3, msps, msps, tm.best * 1e3, tm.cmed * 1e3, n / tm.cmed / 1e6);
}

} // namespace

int main(int argc, char** argv)
{
    if (argc != 6) {
        std::fprintf(stderr, "usage: gr_fft_filter C P R L SECONDS\n");
        return 2;
    }
    const size_t C = std::strtoul(argv[1], nullptr, 10), P = std::strtoul(argv[2], nullptr, 10),
                 R = std::strtoul(argv[3], nullptr, 10), L = std::strtoul(argv[4], nullptr, 10);
    const double seconds = std::atof(argv[5]);
    if (C == 0 || P == 0 || R == 0 || L == 0 || L > R) {
        std::fprintf(stderr, "gr_fft_filter: need C, P, R, L >= 1 and L <= R\n");
        return 2;
    }
    const double fs = 100e6, B = 40e6, tau = L / fs;

    std::vector<gr_complex> h(L), taps(L);
    for (size_t k = 0; k < L; k++) {
        double t = k / fs - tau / 2, ph = M_PI * (B / tau) * t * t;
        double w = L == 1 ? 1.0 : 0.54 - 0.46 * std::cos(2 * M_PI * k / (L - 1.0));
        h[k] = gr_complex(float(w * std::cos(ph)), float(w * std::sin(ph)));
    }
    for (size_t k = 0; k < L; k++)
        taps[k] = std::conj(h[L - 1 - k]);

    gr::filter::kernel::fft_filter_ccc filt(1, taps, 1);
    const size_t nsamples = size_t(filt.set_taps(taps));
    const size_t rows = C * P, n = rows * R, seg = R + L - 1;
    auto blocks = [&](size_t m) { return (m + nsamples - 1) / nsamples * nsamples; };
    const size_t nstream = blocks(n), npad = blocks(rows * seg);

    // The CPI, row after row.
    std::vector<gr_complex> in(nstream);
    std::mt19937 rng(12345);
    std::uniform_real_distribution<float> u(-0.5f, 0.5f);
    for (size_t i = 0; i < n; i++)
        in[i] = gr_complex(u(rng), u(rng));
    // The same rows, each followed by L-1 zeros (zero-initialised).
    std::vector<gr_complex> inpad(npad), out(std::max(npad, nstream));
    for (size_t j = 0; j < rows; j++)
        std::copy(in.begin() + j * R, in.begin() + (j + 1) * R, inpad.begin() + j * seg);

    // Same output as chirpd. Across runs the filter's tail only reaches
    // output samples 0..L-2, which are no gate.
    timing same = measure([&] { filt.filter(int(npad), inpad.data(), out.data()); }, seconds);
    double num = 0, den = 0;
    for (size_t j : {size_t(0), rows / 2, rows - 1})
        check_row(&in[j * R], R, h, &out[j * seg + L - 1], 0, R, num, den);
    const double err_same = std::sqrt(num / den);

    // Streaming, rows bleeding into each other.
    timing stream = measure([&] { filt.filter(int(nstream), in.data(), out.data()); }, seconds);
    double err_stream;
    {
        gr::filter::kernel::fft_filter_ccc f2(1, taps, 1);
        f2.filter(int(nstream), in.data(), out.data());
        num = den = 0;
        check_row(&in[0], R, h, &out[L - 1], 0, R - L + 1, num, den);
        err_stream = std::sqrt(num / den);
    }

    std::fprintf(stderr,
                 "gr_fft_filter: %zux%zux%zu L %zu, nsamples %zu; relative error vs direct correlation: "
                 "same-output rows 0, %zu, %zu, all %zu gates %.2e; stream row 0, gates 0..%zu %.2e\n",
                 C, P, R, L, nsamples, rows / 2, rows - 1, R, err_same, R - L, err_stream);
    tsv("gnuradio", C, P, R, L, same);
    tsv("gnuradio-stream", C, P, R, L, stream);
    if (!(err_same <= 1e-4) || !(err_stream <= 1e-4)) {
        std::fprintf(stderr, "gr_fft_filter: relative error above 1e-4\n");
        return 1;
    }
    return 0;
}
