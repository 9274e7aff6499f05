/* Decode only a window of a JPEG, at a DCT scale, with the system's libjpeg-turbo.
 *
 * libjpeg-turbo (>= 1.5) can skip rows above a window (jpeg_skip_scanlines: they are still
 * entropy-decoded, not transformed or colour-converted), decode a column range only
 * (jpeg_crop_scanline: the IDCT runs on the blocks inside it) and stop below it. Combined with
 * scale_num/scale_denom the window comes out at 1/2, 1/4 or 1/8 of full size.
 *
 * Exact pixels: fancy upsampling interpolates a chroma column from its neighbours, and a cropped
 * decode treats the window's edges as the image's. The window is therefore widened by one
 * column on each side (where the image has one) and those columns are returned with it; the
 * caller cuts them off. The same holds for rows: the decode starts one row above the window.
 * A window is also at least MIN_COLUMNS wide (see run()).
 *
 * Refused (ValueError, so that the caller decodes the whole image with simplejpeg instead):
 * - an incomplete progressive file (a coefficient never sent, or never refined to its last
 *   bit): libjpeg smooths such an image between blocks, and a window's smoothing differs from
 *   the whole image's at the window's edges;
 * - an image whose coefficient buffer (progressive and multi-scan files keep the whole image's
 *   coefficients) needs more than `max_memory` bytes (libjpeg's max_memory_to_use), and a file
 *   of more than `max_scans` scans (each costs a pass over every block; libjpeg-turbo's own
 *   tools stop at 500);
 * - window coordinates out of range (checked before any arithmetic on them).
 *
 * Restart markers: in a sequential Huffman-coded file whose restart intervals lie on a grid (a
 * marker every whole number of MCU rows, or every whole fraction of one: `fastpack build
 * --restart-markers`), only the intervals around the window are entropy-decoded. A marker
 * resets the DC predictors, so an interval decodes alone: the decode reads a copy of the file
 * whose frame size is the region's and whose entropy-coded data is the region's intervals one
 * after the other, restart markers renumbered from RST0 between them (see cut_to_region()).
 * The region keeps one MCU of context beyond the window's pixel of context on every side:
 * chroma upsampling reads the chroma sample beyond a window's edge. A file without such markers
 * decodes as before. The markers take libjpeg-turbo off its fast Huffman path, which slows the
 * whole decode a little; the region saves more wherever a crop leaves whole intervals out
 * (benchmarks/readers/RESTART.md).
 *
 * The GIL is released for the whole decode.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <limits.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* libjpeg, the version it needs, the limits and parse_limits, ErrorManager, require_complete,
 * bounded_long */
#include "jpeg_limits.h"

#define MAX_SHIFT 3
#define MIN_COLUMNS 32
#define ROWS_PER_READ 16 /* rows asked of libjpeg per call: a whole row group */
/* Window coordinates, in pixels: far above JPEG's 65535, low enough that top + height and
 * left + width fit in a long anywhere. */
#define MAX_COORDINATE ((1L << 30) - 1)

typedef struct {
    /* in */
    const unsigned char *data;
    size_t size;
    int shift, fastdct, fastupsample, max_scans;
    long top, left, height, width; /* window, in pixels of the scaled image */
    long max_memory;
    unsigned char *out;
    size_t capacity;
    /* out */
    long x0, columns, y0, rows, image_height, image_width;
    long rows_cut, columns_cut; /* full-size rows and columns before the decoded region */
    unsigned char *cut_buffer; /* the cut file (malloc), freed by the caller */
    int failed;
    char message[MESSAGE_BYTES];
} Job;

static long clamp(long value, long low, long high) {
    return value < low ? low : (value > high ? high : value);
}

/* Where the frame header's height field, and after it the width, is among the header bytes
 * [0, end) (the SOF0 or SOF1 segment: FF Cn, length, precision, height, width), or -1 where
 * there is none. */
static long frame_height_at(const unsigned char *data, size_t end) {
    size_t pos = 2; /* after SOI */
    while (pos + 4 <= end) {
        if (data[pos] != 0xFF) return -1;
        unsigned char marker = data[pos + 1];
        if (marker == 0xFF) { /* a fill byte before a marker */
            pos++;
            continue;
        }
        size_t length = ((size_t)data[pos + 2] << 8) | data[pos + 3];
        if (length < 2 || pos + 2 + length > end) return -1;
        if (marker == 0xC0 || marker == 0xC1) return length >= 8 ? (long)(pos + 5) : -1;
        pos += 2 + length;
    }
    return -1;
}

/* One restart interval's entropy-coded bytes: [start, end) of the scan's data. */
typedef struct {
    size_t start, end;
} Interval;

/* The `count` restart intervals of the entropy-coded data [0, size), in `intervals`: each one
 * ends at the next restart marker, the last at the first other marker (EOI) or the end of the
 * data. 0 where the data has another number of intervals or a marker out of turn (RST0 first,
 * then RST1 ... RST7, RST0 ...), 1 otherwise. Stuffed zero bytes (FF 00) and fill bytes
 * (FF FF) are skipped. */
static int index_intervals(const unsigned char *data, size_t size, Interval *intervals,
                           long count) {
    long seen = 0;
    size_t pos = 0;
    intervals[0].start = 0;
    while (pos + 1 < size) {
        const unsigned char *ff = memchr(data + pos, 0xFF, size - 1 - pos);
        if (ff == NULL) break;
        pos = (size_t)(ff - data);
        unsigned char next = data[pos + 1];
        if (next == 0xFF) {
            pos++;
        } else if (next == 0x00) {
            pos += 2;
        } else if (next >= 0xD0 && next <= 0xD7) {
            if (next != 0xD0 + (seen & 7) || seen + 1 >= count) return 0;
            intervals[seen].end = pos;
            intervals[++seen].start = pos + 2;
            pos += 2;
        } else {
            intervals[seen].end = pos;
            return seen + 1 == count;
        }
    }
    intervals[seen].end = size;
    return seen + 1 == count;
}

/* The region of the image a cut keeps: MCU rows [row0, row1) and, in each, the restart
 * intervals [first, last) of the row (all of them where an interval spans whole rows). */
typedef struct {
    long row0, row1, first, last;
} Region;

/* The file's restart-interval grid, where a cut can use it: a sequential Huffman-coded file,
 * one scan of every component, markers every whole number of MCU rows or every whole fraction
 * of one. Zeroed where not. */
typedef struct {
    long mcu_h, mcu_w, per_row, mcu_rows; /* MCU size in pixels, MCUs per row, MCU rows */
    long rows_per_interval, per_row_intervals; /* one of them is 1 */
} Grid;

static int restart_grid(j_decompress_ptr cinfo, Grid *grid) {
    memset(grid, 0, sizeof(*grid));
    if (cinfo->progressive_mode || cinfo->arith_code || cinfo->restart_interval == 0 ||
        cinfo->comps_in_scan != cinfo->num_components)
        return 0;
    int interleaved = cinfo->num_components > 1; /* else an MCU is one 8 x 8 block */
    grid->mcu_h = DCTSIZE * (interleaved ? cinfo->max_v_samp_factor : 1);
    grid->mcu_w = DCTSIZE * (interleaved ? cinfo->max_h_samp_factor : 1);
    grid->per_row = ((long)cinfo->image_width + grid->mcu_w - 1) / grid->mcu_w;
    grid->mcu_rows = ((long)cinfo->image_height + grid->mcu_h - 1) / grid->mcu_h;
    long interval = (long)cinfo->restart_interval;
    if (interval % grid->per_row == 0) {
        grid->rows_per_interval = interval / grid->per_row;
        grid->per_row_intervals = 1;
    } else if (grid->per_row % interval == 0) {
        grid->rows_per_interval = 1;
        grid->per_row_intervals = grid->per_row / interval;
    } else {
        return 0;
    }
    return 1;
}

/* The intervals of the whole file. */
static long interval_count(const Grid *grid) {
    if (grid->per_row_intervals > 1) return grid->mcu_rows * grid->per_row_intervals;
    return (grid->mcu_rows + grid->rows_per_interval - 1) / grid->rows_per_interval;
}

/* The region that holds the scaled pixels [y0, y1) x [x0, x1) with one MCU of context on
 * every side (chroma upsampling reads the chroma sample beyond a window's edge), widened to
 * whole restart intervals. */
static Region needed_region(const Grid *grid, int shift, long y0, long y1, long x0, long x1) {
    long mcu_h = grid->mcu_h >> shift, mcu_w = grid->mcu_w >> shift;
    long row0 = y0 / mcu_h - 1, row1 = (y1 - 1) / mcu_h + 2;
    long column0 = x0 / mcu_w - 1, column1 = (x1 - 1) / mcu_w + 2;
    row0 = row0 < 0 ? 0 : row0 / grid->rows_per_interval * grid->rows_per_interval;
    row1 = row1 > grid->mcu_rows ? grid->mcu_rows : row1;
    if (grid->per_row_intervals == 1) { /* intervals of whole rows: no cut beside the window */
        row1 = (row1 + grid->rows_per_interval - 1) / grid->rows_per_interval *
               grid->rows_per_interval;
        row1 = row1 > grid->mcu_rows ? grid->mcu_rows : row1;
        return (Region){row0, row1, 0, 1};
    }
    long interval = grid->per_row / grid->per_row_intervals;
    column0 = column0 < 0 ? 0 : column0;
    column1 = column1 > grid->per_row ? grid->per_row : column1;
    return (Region){row0, row1, column0 / interval, (column1 + interval - 1) / interval};
}

/* Writes the two bytes of `value` at `at`, big-endian. */
static void put16(unsigned char *at, long value) {
    at[0] = (unsigned char)(value >> 8);
    at[1] = (unsigned char)(value & 0xFF);
}

/* Where the file has restart markers on a grid (restart_grid) and the decode needs less than
 * the whole image (scaled rows [y0, y1), columns [x0, x1)): points `cinfo` at a copy of the
 * file that holds only the restart intervals of the needed region (job->cut_buffer; its
 * header read): the frame's size lowered to the region's, the intervals' bytes one after the
 * other with restart markers renumbered from RST0 between them. Sets where the copy's first
 * pixel lies in the full-size image and returns 1; returns 0, `cinfo` untouched, where no cut
 * applies. */
static int cut_to_region(j_decompress_ptr cinfo, Job *job, long y0, long y1, long x0, long x1,
                         long *top, long *left) {
    Grid grid;
    if (!restart_grid(cinfo, &grid)) return 0;
    Region region = needed_region(&grid, job->shift, y0, y1, x0, x1);
    long per_row = grid.per_row_intervals;
    if (region.row0 == 0 && region.row1 == grid.mcu_rows && region.first == 0 &&
        region.last == per_row)
        return 0;
    size_t header = (size_t)(cinfo->src->next_input_byte - job->data); /* through the SOS */
    long size_at = frame_height_at(job->data, header);
    long count = interval_count(&grid);
    if (size_at < 0 || header >= job->size || count > (long)((job->size - header) / 2 + 1))
        return 0; /* every interval but the last ends in a 2-byte marker */
    Interval *intervals = malloc((size_t)count * sizeof(Interval));
    if (intervals == NULL) return 0;
    const unsigned char *entropy = job->data + header;
    if (!index_intervals(entropy, job->size - header, intervals, count)) {
        free(intervals);
        return 0;
    }
    /* the intervals kept, as [first, last) of the file's numbering, one range per MCU row (or
     * one range of whole-row intervals) */
    long ranges = per_row > 1 ? region.row1 - region.row0 : 1;
    long first = per_row > 1 ? region.row0 * per_row + region.first
                             : region.row0 / grid.rows_per_interval;
    long width = per_row > 1 ? region.last - region.first
                             : (region.row1 - region.row0 + grid.rows_per_interval - 1) /
                                   grid.rows_per_interval;
    size_t bytes = header + 2;
    for (long r = 0; r < ranges; r++)
        for (long k = first + r * per_row; k < first + r * per_row + width; k++)
            bytes += intervals[k].end - intervals[k].start + 2;
    unsigned char *cut = malloc(bytes);
    if (cut == NULL) {
        free(intervals);
        return 0;
    }
    memcpy(cut, job->data, header);
    long interval_w = grid.per_row / per_row * grid.mcu_w;
    long height = (region.row1 * grid.mcu_h < (long)cinfo->image_height
                       ? region.row1 * grid.mcu_h
                       : (long)cinfo->image_height) -
                  region.row0 * grid.mcu_h;
    long right = region.last * interval_w;
    long width_px = (right < (long)cinfo->image_width ? right : (long)cinfo->image_width) -
                    region.first * interval_w;
    put16(cut + size_at, height);
    put16(cut + size_at + 2, width_px);
    size_t at = header;
    long written = 0;
    for (long r = 0; r < ranges; r++) {
        for (long k = first + r * per_row; k < first + r * per_row + width; k++) {
            if (written > 0) {
                cut[at++] = 0xFF;
                cut[at++] = (unsigned char)(0xD0 + ((written - 1) & 7));
            }
            size_t length = intervals[k].end - intervals[k].start;
            memcpy(cut + at, entropy + intervals[k].start, length);
            at += length;
            written++;
        }
    }
    cut[at++] = 0xFF;
    cut[at++] = 0xD9; /* EOI */
    free(intervals);
    job->cut_buffer = cut;
    *top = region.row0 * grid.mcu_h;
    *left = region.first * interval_w;
    jpeg_abort_decompress(cinfo);
    jpeg_mem_src(cinfo, cut, (unsigned long)at);
    jpeg_read_header(cinfo, TRUE);
    return 1;
}

/* The output the job asks for; again after each jpeg_read_header, which resets it. */
static void set_output(j_decompress_ptr cinfo, const Job *job) {
    cinfo->out_color_space = JCS_RGB;
    cinfo->scale_num = 1;
    cinfo->scale_denom = 1u << job->shift;
    cinfo->dct_method = job->fastdct ? JDCT_IFAST : JDCT_ISLOW;
    cinfo->do_fancy_upsampling = job->fastupsample ? FALSE : TRUE;
}

/* Runs without the GIL. Fills job->out with rows x columns x 3 bytes (RGB) covering the window
 * widened by one pixel each way (clamped), and says where that block starts. */
static void run(Job *job) {
    struct jpeg_decompress_struct cinfo;
    ErrorManager err;
    ScanLimit limit;
    /* volatile: read after a longjmp */
    volatile int created = 0;

    cinfo.err = use_errors(&err);
    if (setjmp(err.escape)) {
        job->failed = 1;
        memcpy(job->message, err.message, sizeof(job->message));
        if (created) jpeg_destroy_decompress(&cinfo);
        return;
    }
    jpeg_create_decompress(&cinfo);
    created = 1;
    use_limits(&cinfo, &limit, job->max_memory, job->max_scans);
    jpeg_mem_src(&cinfo, job->data, (unsigned long)job->size);
    jpeg_read_header(&cinfo, TRUE);
    set_output(&cinfo, job);
    jpeg_calc_output_dimensions(&cinfo);

    long image_h = (long)cinfo.output_height, image_w = (long)cinfo.output_width;
    job->image_height = image_h;
    job->image_width = image_w;
    long top = clamp(job->top, 0, image_h - 1), left = clamp(job->left, 0, image_w - 1);
    long bottom = clamp(job->top + job->height, top + 1, image_h);
    long right = clamp(job->left + job->width, left + 1, image_w);
    /* one pixel of context each way, where the image has it */
    long y0 = top > 0 ? top - 1 : 0, y1 = bottom < image_h ? bottom + 1 : bottom;
    long x0 = left > 0 ? left - 1 : 0, x1 = right < image_w ? right + 1 : right;
    /* libjpeg-turbo replaces fancy upsampling by plain replication for a component at most
     * 2 samples wide, which a narrow crop would be: keep the window wide enough. */
    if (x1 - x0 < MIN_COLUMNS) {
        x1 = x0 + MIN_COLUMNS < image_w ? x0 + MIN_COLUMNS : image_w;
        x0 = x1 - MIN_COLUMNS > 0 ? x1 - MIN_COLUMNS : 0;
    }

    /* where the decoded image starts in the full-size one, and at the decode's scale */
    long cut_top = 0, cut_left = 0;
    if (cut_to_region(&cinfo, job, y0, y1, x0, x1, &cut_top, &cut_left)) set_output(&cinfo, job);
    long dy = cut_top >> job->shift, dx = cut_left >> job->shift;
    jpeg_start_decompress(&cinfo); /* reads a whole multi-scan file: coef_bits are final */
    require_complete(&cinfo);
    if ((long)cinfo.output_height < y1 - dy || (long)cinfo.output_width < x1 - dx) {
        fail((j_common_ptr)&cinfo, "the cut at (%ld, %ld) decodes to %ux%u, short of %ldx%ld",
             cut_top, cut_left, cinfo.output_height, cinfo.output_width, y1 - dy, x1 - dx);
    }

    JDIMENSION xoffset = (JDIMENSION)(x0 - dx), columns = (JDIMENSION)(x1 - x0);
    if (columns < cinfo.output_width) jpeg_crop_scanline(&cinfo, &xoffset, &columns);
    size_t stride = (size_t)columns * 3;
    if ((size_t)(y1 - y0) * stride > job->capacity) {
        fail((j_common_ptr)&cinfo, "the output buffer holds %zu bytes, the window needs %zu",
             job->capacity, (size_t)(y1 - y0) * stride);
    }
    if (y0 > dy) {
        JDIMENSION skip = (JDIMENSION)(y0 - dy);
        JDIMENSION skipped = jpeg_skip_scanlines(&cinfo, skip);
        if (skipped != skip) fail((j_common_ptr)&cinfo, "skipped %u of %u rows", skipped, skip);
    }
    JSAMPROW rows[ROWS_PER_READ];
    for (long row = 0; row < y1 - y0;) {
        long batch = y1 - y0 - row < ROWS_PER_READ ? y1 - y0 - row : ROWS_PER_READ;
        for (long i = 0; i < batch; i++) rows[i] = job->out + (size_t)(row + i) * stride;
        JDIMENSION got = jpeg_read_scanlines(&cinfo, rows, (JDIMENSION)batch);
        if (got == 0) {
            fail((j_common_ptr)&cinfo, "the data ended at row %ld", y0 + row);
        }
        row += (long)got;
    }
    job->x0 = (long)xoffset + dx;
    job->columns = (long)columns;
    job->y0 = y0;
    job->rows = y1 - y0;
    job->rows_cut = cut_top;
    job->columns_cut = cut_left;
    jpeg_abort_decompress(&cinfo);
    jpeg_destroy_decompress(&cinfo);
}

/* `value` (a Python int) as a long; -1 with TypeError for what is not an int. `*overflow` is
 * -1 or 1 where it does not fit (the long is then meaningless). */
static int as_long(PyObject *value, long *out, int *overflow) {
    *out = PyLong_AsLongAndOverflow(value, overflow);
    return *out == -1 && PyErr_Occurred() ? -1 : 0;
}

/* The window and the limits from Python, checked; -1 with the exception set. */
static int parse_job(Job *job, PyObject *shift, PyObject *top, PyObject *left, PyObject *height,
                     PyObject *width, PyObject *max_memory, PyObject *max_scans) {
    long value;
    int height_overflow, width_overflow;
    if (bounded_long(shift, "shift", 0, MAX_SHIFT, &value) < 0) return -1;
    job->shift = (int)value;
    if (bounded_long(top, "top", 0, MAX_COORDINATE, &job->top) < 0 ||
        bounded_long(left, "left", 0, MAX_COORDINATE, &job->left) < 0 ||
        as_long(height, &job->height, &height_overflow) < 0 ||
        as_long(width, &job->width, &width_overflow) < 0)
        return -1;
    if (height_overflow < 0 || width_overflow < 0 || (height_overflow == 0 && job->height < 1) ||
        (width_overflow == 0 && job->width < 1)) {
        PyErr_Format(PyExc_ValueError, "the window must be at least 1x1, got %Sx%S", height,
                     width);
        return -1;
    }
    if (bounded_long(height, "height", 1, MAX_COORDINATE, &job->height) < 0 ||
        bounded_long(width, "width", 1, MAX_COORDINATE, &job->width) < 0)
        return -1;
    return parse_limits(max_memory, max_scans, &job->max_memory, &job->max_scans);
}

PyDoc_STRVAR(decode_window_doc,
"decode_window(data, shift, top, left, height, width, out, fastdct=False, fastupsample=False,\n"
"              *, max_memory=DEFAULT_MAX_MEMORY, max_scans=DEFAULT_MAX_SCANS)\n"
"\n"
"Decode the window [top, top + height) x [left, left + width) of the JPEG `data` at\n"
"1 / 2**shift of full size (window in pixels of that scale) as RGB into the writable buffer\n"
"`out`. The decoded block covers the window and may extend past it (one pixel of context\n"
"each way, and the left edge moved to a block boundary); it is stored row after row with no\n"
"padding. Returns (y0, x0, rows, columns, scaled_height, scaled_width, (top, left)): where\n"
"the block starts in the scaled image, its size, the scaled image's size, and where the\n"
"region that was entropy-decoded starts in the full-size image ((0, 0) unless restart\n"
"markers let the decode leave out what lies above or left of it). Raises ValueError with\n"
"libjpeg's message when the data is not a JPEG it decodes, and with the reason for an\n"
"incomplete progressive file, a file that needs more than `max_memory` bytes of libjpeg\n"
"memory or has more than `max_scans` scans, and window coordinates out of range (top and\n"
"left 0 to 2**30 - 1, height and width 1 to 2**30 - 1).");

static PyObject *decode_window(PyObject *module, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"data", "shift", "top", "left", "height", "width", "out",
                               "fastdct", "fastupsample", "max_memory", "max_scans", NULL};
    Py_buffer data, out;
    PyObject *shift, *top, *left, *height, *width, *max_memory = NULL, *max_scans = NULL;
    Job job;
    (void)module;
    memset(&job, 0, sizeof(job));
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "y*OOOOOw*|pp$OO", keywords, &data, &shift,
                                     &top, &left, &height, &width, &out, &job.fastdct,
                                     &job.fastupsample, &max_memory, &max_scans))
        return NULL;
    PyObject *result = NULL;
    if (parse_job(&job, shift, top, left, height, width, max_memory, max_scans) == 0) {
        job.data = data.buf;
        job.size = (size_t)data.len;
        job.out = out.buf;
        job.capacity = (size_t)out.len;
        Py_BEGIN_ALLOW_THREADS run(&job);
        Py_END_ALLOW_THREADS
        free(job.cut_buffer);
        if (job.failed)
            PyErr_SetString(PyExc_ValueError, job.message);
        else
            result = Py_BuildValue("llllll(ll)", job.y0, job.x0, job.rows, job.columns,
                                   job.image_height, job.image_width, job.rows_cut,
                                   job.columns_cut);
    }
    PyBuffer_Release(&data);
    PyBuffer_Release(&out);
    return result;
}

static PyMethodDef methods[] = {
    {"decode_window", (PyCFunction)(void (*)(void))decode_window, METH_VARARGS | METH_KEYWORDS,
     decode_window_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_jpeg_crop",
    "Window decodes of JPEGs at a DCT scale with the system's libjpeg-turbo.", -1, methods,
};

PyMODINIT_FUNC PyInit__jpeg_crop(void) {
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    if (PyModule_AddIntConstant(m, "LIBJPEG_TURBO_VERSION", LIBJPEG_TURBO_VERSION_NUMBER) < 0 ||
        PyModule_AddIntConstant(m, "DEFAULT_MAX_MEMORY", DEFAULT_MAX_MEMORY) < 0 ||
        PyModule_AddIntConstant(m, "DEFAULT_MAX_SCANS", DEFAULT_MAX_SCANS) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
