// runtime/serve/downsample.cpp: LTTB (see downsample.h).
#include "runtime/serve/downsample.h"

#include <cmath>

namespace ltrun::serve {

std::vector<size_t> lttb(const std::vector<double>& x, const std::vector<double>& y, size_t points) {
  const size_t n = x.size();
  std::vector<size_t> keep;
  if (n <= points || n <= 2) {
    for (size_t i = 0; i < n; i++) keep.push_back(i);
    return keep;
  }
  if (points < 3) return {0, n - 1};
  const size_t buckets = points - 2;
  // the inner points 1..n-2 split into `buckets` buckets of near-equal size
  auto bucket_start = [&](size_t b) { return 1 + b * (n - 2) / buckets; };
  keep.push_back(0);
  size_t a = 0;
  for (size_t b = 0; b < buckets; b++) {
    const size_t lo = bucket_start(b), hi = bucket_start(b + 1);
    // mean of the next bucket (the last point for the last bucket)
    double mx = 0, my = 0;
    size_t cnt = 0;
    const size_t nlo = hi, nhi = b + 1 < buckets ? bucket_start(b + 2) : n;
    for (size_t j = nlo; j < nhi; j++)
      if (std::isfinite(y[j])) mx += x[j], my += y[j], cnt++;
    if (cnt) mx /= double(cnt), my /= double(cnt);
    else mx = x[n - 1], my = std::isfinite(y[n - 1]) ? y[n - 1] : 0;
    const double ya = std::isfinite(y[a]) ? y[a] : my;  // a NaN first point: measure from the mean
    double best = -1;
    size_t pick = lo;
    bool non_finite = false;
    for (size_t j = lo; j < hi; j++) {
      if (!std::isfinite(y[j])) {
        keep.push_back(j);
        non_finite = true;
        continue;
      }
      const double area = std::fabs((x[a] - mx) * (y[j] - ya) - (x[a] - x[j]) * (my - ya));
      if (area > best) best = area, pick = j;
    }
    if (best >= 0) {
      if (non_finite) {  // keep ascending order among the non-finite points kept above
        auto it = keep.end();
        while (it != keep.begin() && *(it - 1) > pick) --it;
        keep.insert(it, pick);
      } else {
        keep.push_back(pick);
      }
      a = pick;
    }
  }
  keep.push_back(n - 1);
  return keep;
}

}  // namespace ltrun::serve
