// gr_fft_filter.cc — GNU Radio's gr::filter::kernel::fft_filter_ccc on the
// same CPI as bench_pc, for scripts/bench-compare.sh (not built by make).
//
//   gr_fft_filter C P R L SECONDS
//
// The reference is the same LFM as bench_pc (fs 100 MHz, B 40 MHz, tau =
// L/fs, Hamming window); the taps are conj(h) reversed, so the filter's
// output sample n+L-1 is the correlation gate n. fft_filter_ccc is a
// streaming overlap-add filter: all C*P rows are pushed through it as one
// continuous stream (as a flowgraph would), padded to its block size
// (nsamples = fftsize - ntaps + 1, fftsize = 2 * 2^ceil(log2 ntaps)),
// single thread (nthreads = 1). Rows bleed L-1 samples into the next row —
// the work per sample is the same, the edge handling is not. Prints one TSV
// line like bench_pc --tsv, and the relative error of gates 0..R-L of row 0
// against a direct double-precision correlation on stderr.
#include <gnuradio/filter/fft_filter.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <random>
#include <vector>

int main(int argc, char** argv)
{
    if (argc != 6) {
        std::fprintf(stderr, "usage: gr_fft_filter C P R L SECONDS\n");
        return 2;
    }
    const size_t C = std::strtoul(argv[1], nullptr, 10), P = std::strtoul(argv[2], nullptr, 10),
                 R = std::strtoul(argv[3], nullptr, 10), L = std::strtoul(argv[4], nullptr, 10);
    const double seconds = std::atof(argv[5]);
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
    const size_t n = C * P * R, nstream = (n + nsamples - 1) / nsamples * nsamples;

    std::vector<gr_complex> in(nstream), out(nstream);
    std::mt19937 rng(12345);
    std::uniform_real_distribution<float> u(-0.5f, 0.5f);
    for (size_t i = 0; i < n; i++)
        in[i] = gr_complex(u(rng), u(rng));

    auto run = [&] { filt.filter(int(nstream), in.data(), out.data()); };
    run();
    run();
    std::vector<double> t, tc;
    auto now = [] { return std::chrono::duration<double>(
                        std::chrono::steady_clock::now().time_since_epoch()).count(); };
    auto cpu = [] {
        timespec ts;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
        return ts.tv_sec + ts.tv_nsec * 1e-9;
    };
    double end = now() + seconds;
    while (t.size() < 5 || now() < end) {
        double t0 = now(), c0 = cpu();
        run();
        t.push_back(now() - t0);
        tc.push_back(cpu() - c0);
    }
    std::sort(t.begin(), t.end());
    std::sort(tc.begin(), tc.end());
    double med = t[t.size() / 2], best = t[0], msps = n / med / 1e6;
    double cmed = tc[tc.size() / 2];

    // Check: a fresh filter (no tail from earlier runs) on row 0.
    {
        gr::filter::kernel::fft_filter_ccc f2(1, taps, 1);
        std::vector<gr_complex> o2(nstream);
        f2.filter(int(nstream), in.data(), o2.data());
        double num = 0, den = 0;
        for (size_t g = 0; g + L <= R; g++) {
            std::complex<double> s = 0;
            for (size_t k = 0; k < L; k++)
                s += std::complex<double>(in[g + k]) * std::conj(std::complex<double>(h[k]));
            std::complex<double> d = std::complex<double>(o2[g + L - 1]) - s;
            num += std::norm(d);
            den += std::norm(s);
        }
        std::fprintf(stderr, "gr_fft_filter: nsamples %zu, row-0 relative error vs direct correlation %.2e\n",
                     nsamples, std::sqrt(num / den));
    }
    std::printf("gnuradio\t%zux%zux%zu\t%zu\t-\t1\tcf32\tcomplex\t%.4f\t%.2f\t%.2f\t%.4f\t%.4f\t%.2f\n",
                C, P, R, L, med * 1e3, msps, msps, best * 1e3, cmed * 1e3, n / cmed / 1e6);
    return 0;
}
