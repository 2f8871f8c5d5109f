/* FANN 2.2 (Debian libfann-dev, double precision) on a data set in Toman's text format,
 * from the starting weights of a deepbelief mlp.json (converted by bench/toman_fann.py to
 * plain text), printing Toman's RMS/2 (sqrt(MSE) / 2, FANN's MSE being Σ diff² / (N·K))
 * for every epoch: the peer of `deepbelief mlp --optimizer rprop-fann|quickprop|backprop|
 * incremental` (docs/TOMAN.md). All units FANN_SIGMOID (steepness 0.5: the plain logistic),
 * FANN_ERRORFUNC_LINEAR, learning rate 0.7, momentum 0 unless given.
 *
 *   toman_fann DATA.txt WEIGHTS.txt rprop|quickprop|batch|incremental EPOCHS [MOMENTUM]
 *
 * Output: one line per epoch, "epoch rms_half seconds"; seconds are FANN's epoch only. */
#include <doublefann.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static char line[1 << 20];

/* The next line that is neither blank nor a # comment, or NULL at the end. */
static char *next_line(FILE *f) {
    while (fgets(line, sizeof line, f)) {
        char *p = line;
        while (*p == ' ' || *p == '\t') p++;
        if (*p == '#' || *p == '\n' || *p == '\r' || *p == 0) continue;
        return p;
    }
    return NULL;
}

static struct fann_train_data *read_toman(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) { perror(path); exit(1); }
    unsigned n_in = atoi(next_line(f));
    for (unsigned i = 0; i < n_in; i++) next_line(f);
    unsigned n_out = atoi(next_line(f));
    for (unsigned i = 0; i < n_out; i++) next_line(f);
    unsigned n = atoi(next_line(f));
    struct fann_train_data *data = fann_create_train(n, n_in, n_out);
    for (unsigned p = 0; p < n; p++) {
        char *s = next_line(f), *end;
        if (!s) { fprintf(stderr, "%s: pattern %u missing\n", path, p + 1); exit(1); }
        for (unsigned i = 0; i < n_in; i++) { data->input[p][i] = strtod(s, &end); s = end; }
        s = strchr(s, '|');
        if (!s) { fprintf(stderr, "%s: pattern %u has no |\n", path, p + 1); exit(1); }
        s++;
        for (unsigned k = 0; k < n_out; k++) { data->output[p][k] = strtod(s, &end); s = end; }
    }
    fclose(f);
    return data;
}

int main(int argc, char **argv) {
    if (argc < 5) { fprintf(stderr, "usage: %s DATA WEIGHTS rprop|quickprop|batch|incremental EPOCHS [MOMENTUM]\n", argv[0]); return 2; }
    struct fann_train_data *data = read_toman(argv[1]);
    FILE *w = fopen(argv[2], "r");
    if (!w) { perror(argv[2]); return 1; }
    unsigned n_layers;
    if (fscanf(w, "%u", &n_layers) != 1) return 1;
    unsigned sizes[16];
    for (unsigned l = 0; l < n_layers; l++) if (fscanf(w, "%u", &sizes[l]) != 1) return 1;
    struct fann *ann = fann_create_standard_array(n_layers, sizes);
    /* Our layers: per layer, n_in × n_out weights (row i for input i), then n_out biases.
     * FANN's connections: per neuron of layer l ≥ 1, one from every neuron of layer l − 1,
     * its bias neuron last. Map them by global neuron numbers. */
    unsigned starts[16], at = 0;
    for (unsigned l = 0; l < n_layers; l++) { starts[l] = at; at += sizes[l] + 1; }
    double *values[16];
    for (unsigned l = 1; l < n_layers; l++) {
        unsigned count = sizes[l - 1] * sizes[l] + sizes[l];
        values[l] = malloc(sizeof(double) * count);
        for (unsigned k = 0; k < count; k++) if (fscanf(w, "%lf", &values[l][k]) != 1) { fprintf(stderr, "weights: layer %u value %u\n", l, k); return 1; }
    }
    fclose(w);
    unsigned total = fann_get_total_connections(ann);
    struct fann_connection *conns = malloc(sizeof *conns * total);
    fann_get_connection_array(ann, conns);
    for (unsigned c = 0; c < total; c++) {
        unsigned l = 1;
        while (l + 1 < n_layers && conns[c].to_neuron >= starts[l + 1]) l++;
        unsigned j = conns[c].to_neuron - starts[l], i = conns[c].from_neuron - starts[l - 1];
        conns[c].weight = i == sizes[l - 1] ? values[l][sizes[l - 1] * sizes[l] + j] : values[l][i * sizes[l] + j];
    }
    fann_set_weight_array(ann, conns, total);
    fann_set_activation_function_hidden(ann, FANN_SIGMOID);
    fann_set_activation_function_output(ann, FANN_SIGMOID);
    fann_set_train_error_function(ann, FANN_ERRORFUNC_LINEAR);
    fann_set_learning_rate(ann, 0.7f);
    fann_set_learning_momentum(ann, argc > 6 ? atof(argv[6]) : 0.0);
    const char *algorithm = argv[3];
    fann_set_training_algorithm(ann, !strcmp(algorithm, "rprop") ? FANN_TRAIN_RPROP : !strcmp(algorithm, "quickprop") ? FANN_TRAIN_QUICKPROP : !strcmp(algorithm, "batch") ? FANN_TRAIN_BATCH : FANN_TRAIN_INCREMENTAL);
    int epochs = atoi(argv[4]);
    for (int e = 1; e <= epochs; e++) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        double mse = fann_train_epoch(ann, data);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        printf("%d %.12g %.6f\n", e, sqrt(mse) / 2.0, (t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec));
    }
    return 0;
}
