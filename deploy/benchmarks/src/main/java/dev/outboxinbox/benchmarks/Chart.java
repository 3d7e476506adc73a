package dev.outboxinbox.benchmarks;

import java.awt.Color;
import java.awt.Font;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.geom.Rectangle2D;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Map;
import javax.imageio.ImageIO;
import org.jfree.chart.ChartFactory;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.axis.CategoryLabelPositions;
import org.jfree.chart.axis.LogAxis;
import org.jfree.chart.axis.NumberTickUnit;
import org.jfree.chart.labels.StandardCategoryItemLabelGenerator;
import org.jfree.chart.plot.CategoryPlot;
import org.jfree.chart.plot.PlotOrientation;
import org.jfree.chart.renderer.category.BarRenderer;
import org.jfree.chart.renderer.category.StandardBarPainter;
import org.jfree.data.category.DefaultCategoryDataset;

/** The report's chart, drawn by JFreeChart: throughput on the left, latency percentiles on the right, both on log scales. */
final class Chart {

    private Chart() {
    }

    /**
     * @param throughput per bar (in order): its value per second
     * @param latency    per measurement (in order): p50, p95, p99 in ms
     */
    static void write(Path png, String subtitle, Map<String, Double> throughput, Map<String, double[]> latency) throws IOException {
        DefaultCategoryDataset rates = new DefaultCategoryDataset();
        throughput.forEach((name, value) -> rates.addValue(value, "per second", name));
        JFreeChart left = ChartFactory.createBarChart("Throughput, side by side", null, "per second (log)", rates,
                PlotOrientation.VERTICAL, false, false, false);
        style(left, "per second (log)");
        left.getCategoryPlot().getDomainAxis().setCategoryLabelPositions(CategoryLabelPositions.UP_45);

        DefaultCategoryDataset times = new DefaultCategoryDataset();
        String[] percentiles = {"p50", "p95", "p99"};
        latency.forEach((name, values) -> {
            for (int i = 0; i < percentiles.length; i++) {
                times.addValue(values[i], percentiles[i], name);
            }
        });
        JFreeChart right = ChartFactory.createBarChart("Latency percentiles", null, "ms (log)", times,
                PlotOrientation.VERTICAL, true, false, false);
        style(right, "ms (log)");
        right.getCategoryPlot().getDomainAxis().setMaximumCategoryLabelLines(3);

        int width = 1600;
        int height = 800;
        BufferedImage image = new BufferedImage(width, height, BufferedImage.TYPE_INT_RGB);
        Graphics2D g = image.createGraphics();
        g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
        g.setColor(Color.WHITE);
        g.fillRect(0, 0, width, height);
        g.setColor(Color.DARK_GRAY);
        g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 13));
        g.drawString(subtitle, 12, 20);
        left.draw(g, new Rectangle2D.Double(0, 30, width * 0.55, height - 30));
        right.draw(g, new Rectangle2D.Double(width * 0.55, 30, width * 0.45, height - 30));
        g.dispose();
        ImageIO.write(image, "png", png.toFile());
    }

    private static void style(JFreeChart chart, String axisLabel) {
        CategoryPlot plot = chart.getCategoryPlot();
        LogAxis axis = new LogAxis(axisLabel);
        axis.setSmallestValue(1);
        axis.setBase(10);
        // A tick per power of ten, written as a number (1, 10, 100, …), not as 10^x.
        axis.setAutoTickUnitSelection(false);
        axis.setTickUnit(new NumberTickUnit(1));
        axis.setNumberFormatOverride(new java.text.DecimalFormat("#,##0"));
        plot.setRangeAxis(axis);
        plot.setBackgroundPaint(Color.WHITE);
        plot.setRangeGridlinePaint(Color.LIGHT_GRAY);
        BarRenderer renderer = (BarRenderer) plot.getRenderer();
        renderer.setBarPainter(new StandardBarPainter());
        renderer.setShadowVisible(false);
        renderer.setDefaultItemLabelGenerator(new StandardCategoryItemLabelGenerator("{2}", new java.text.DecimalFormat("#,##0")));
        renderer.setDefaultItemLabelsVisible(true);
        chart.setBackgroundPaint(Color.WHITE);
    }
}
