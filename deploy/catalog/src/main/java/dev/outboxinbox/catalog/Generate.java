package dev.outboxinbox.catalog;

import com.fasterxml.jackson.core.JsonProcessingException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * deploy/catalog/generate: writes every form of {@link Forms} that differs from what the catalog makes,
 * and removes a file of a directory the catalog owns that it no longer makes (a service taken out).
 * With --check it writes nothing and exits 1 naming the files that differ.
 */
public final class Generate {

    private Generate() {
    }

    public static void main(String[] args) throws IOException {
        if (args.length > 0 && args[0].equals("--new-service")) {
            NewService.main(java.util.Arrays.copyOfRange(args, 1, args.length));
            return;
        }
        boolean check = false;
        Path root = Path.of(".");
        for (String arg : args) {
            switch (arg) {
                case "--check" -> check = true;
                case "-h", "--help" -> {
                    System.out.println("generate [--check] [repository root]: the deployment forms of deploy/catalog.yaml");
                    return;
                }
                default -> root = Path.of(arg);
            }
        }
        Catalog catalog;
        try {
            catalog = Catalog.load(root);
        } catch (Catalog.InvalidCatalogException e) {
            System.err.println("[catalog] " + Catalog.FILE + " cannot be deployed:");
            e.problems().forEach(problem -> System.err.println("  - " + problem));
            System.exit(2);
            return;
        } catch (JsonProcessingException e) {
            // Not YAML, or a key the catalog does not have (a misspelt one is an error, not dropped).
            System.err.println("[catalog] " + Catalog.FILE + " cannot be read: " + e.getOriginalMessage()
                    + (e.getLocation() != null ? " (line " + e.getLocation().getLineNr() + ")" : ""));
            System.exit(2);
            return;
        }
        List<String> differing = differing(root, catalog);
        if (check) {
            differing.forEach(path -> System.err.println("[catalog] differs from " + Catalog.FILE + ": " + path));
            if (!differing.isEmpty()) {
                System.err.println("[catalog] run deploy/catalog/generate and commit what it writes");
                System.exit(1);
            }
            System.out.println("[catalog] every form matches " + Catalog.FILE);
            return;
        }
        Map<String, String> files = new Forms(catalog, root).all();
        for (String path : differing) {
            Path file = root.resolve(path);
            if (files.containsKey(path)) {
                Files.createDirectories(file.getParent());
                Files.writeString(file, files.get(path), StandardCharsets.UTF_8);
                System.out.println("[catalog] wrote " + path);
            } else {
                Files.delete(file);
                System.out.println("[catalog] removed " + path + " (no longer in " + Catalog.FILE + ")");
            }
        }
        System.out.printf("[catalog] %d files from %s, %d changed%n", files.size(), Catalog.FILE, differing.size());
    }

    /** The forms whose file is missing or differs, and the files of owned directories the catalog no longer makes. */
    public static List<String> differing(Path root, Catalog catalog) throws IOException {
        Map<String, String> files = new Forms(catalog, root).all();
        List<String> differing = new ArrayList<>();
        for (Map.Entry<String, String> form : files.entrySet()) {
            Path file = root.resolve(form.getKey());
            if (!Files.isRegularFile(file) || !Files.readString(file, StandardCharsets.UTF_8).equals(form.getValue())) {
                differing.add(form.getKey());
            }
        }
        for (String directory : Forms.ownedDirectories()) {
            Path owned = root.resolve(directory);
            if (!Files.isDirectory(owned)) {
                continue;
            }
            try (Stream<Path> present = Files.list(owned)) {
                present.map(p -> directory + "/" + p.getFileName()).filter(p -> !files.containsKey(p)).sorted().forEach(differing::add);
            }
        }
        return differing;
    }
}
